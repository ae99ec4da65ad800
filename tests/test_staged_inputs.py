"""Ranked inputs out of the worker's Python (issue 40): the core's and the parent's ChaCha20 against RFC
8439's vectors and each other, a CPU call's inputs drawn by the parent
(harness.judge.worker_link.input_stage) arriving in the core's call only there, and what a GPU's drawn
calls rest on: the core's stream keys and the seed's mask."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.judge.worker_link import input_stage
from harness.judge.worker_link.chacha20 import chacha20
from harness.worker import _sealed
from problems.shared.counter_rng import stream_keys

REPO = Path(__file__).resolve().parent.parent
SUNSCREEN = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
             b"sunscreen would be it.")
SUNSCREEN_ENCRYPTED = bytes.fromhex(  # RFC 8439 section 2.4.2
    "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
    "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
    "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
    "5af90bbf74a35be6b40b8eedf2785e42874d")
ZERO_KEYSTREAM = bytes.fromhex(  # RFC 8439 appendix A.2, test vector 1
    "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
    "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586")


@pytest.mark.parametrize("cipher", [_sealed.chacha20, chacha20], ids=["core", "parent"])
def test_each_cipher_matches_rfc_8439(cipher):
    key, nonce = bytes(range(32)), bytes.fromhex("000000000000004a00000000")
    assert cipher(key, nonce, 1, SUNSCREEN) == SUNSCREEN_ENCRYPTED
    assert cipher(key, nonce, 1, SUNSCREEN_ENCRYPTED) == SUNSCREEN
    assert cipher(bytes(32), bytes(12), 0, bytes(64)) == ZERO_KEYSTREAM


@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 4097])
@pytest.mark.parametrize("counter", [0, 5, 2**32 - 2])
def test_the_parent_cipher_and_the_core_cipher_agree(length, counter):
    """Written apart (numpy, C): the same bytes for any length, from any block, the counter wrapping."""
    key, nonce, data = os.urandom(32), os.urandom(12), os.urandom(length)
    assert chacha20(key, nonce, counter, data) == _sealed.chacha20(key, nonce, counter, data)


def test_the_parent_encrypts_what_the_core_decrypts():
    """input_stage's file: each tensor's storage from a block boundary, under that block's counter."""
    key, index = os.urandom(32), 7
    tensors = [torch.arange(100, dtype=torch.int16), torch.randn(3, 5)]
    fd, read_only = input_stage.new_stage_file()
    try:
        input_stage.stage(fd, key, index, tuple(tensors))
        at = 0
        for tensor in tensors:
            plain = tensor.numpy().tobytes()
            encrypted = os.pread(read_only, len(plain), at)
            assert _sealed.chacha20(key, input_stage.nonce(index), at // 64, encrypted) == plain
            at += -(-len(plain) // 64) * 64
        assert at == 256 + 64
        try:
            os.pwrite(read_only, b"x", 0)
            raise AssertionError("the worker's end of the staging file is writable")
        except OSError:
            pass
    finally:
        os.close(fd)
        os.close(read_only)


STAGED_CALLS = """
import torch
from harness.judge.worker_link import input_stage, seal, worker_spawn
from harness.worker import sealed_core
key, read_fd = worker_spawn.new_key_pipe()
timer = sealed_core.SealedTimer(read_fd, torch.device("cpu"))
fd, read_only = input_stage.new_stage_file()
timer.map_inputs(read_only)
seen = []
def kernel(data):
    a, out = data
    seen.append(a.clone())
    if a[0] == 4:  # a cheat: changes its input
        a.add_(1)
    return out.copy_(a * 2)
timer.bind(lambda _: type("S", (), {"custom_kernel": staticmethod(kernel)}), "x")
def call(index, staged_for, first):
    secret = torch.arange(first, first + 8, dtype=torch.float32)
    input_stage.stage(fd, input_stage.stage_key(key), staged_for, (secret, torch.full((8,), float("nan"))))
    public = (torch.zeros(8), torch.full((8,), float("nan")))
    answer = timer.time_call(public, index, 0, 0.0, list(public), 0b01)
    return answer[0], bool(torch.equal(seen[-1], secret))
print(call(1, 1, 100))  # the parent's inputs reach custom_kernel
print(call(2, 3, 200))  # another index's ciphertext: noise
print(call(4, 4, 4))    # custom_kernel changes its operand: refused
for attempt in (lambda: sealed_core._sealed.add_draw(0, [(1, bytes(32), [(16, b"a")])]),
                lambda: timer.time_call((torch.zeros(8),), 5, 0, 0.0, draw=0, sealed=bytes(8))):
    try:
        attempt()
        print("accepted")
    except RuntimeError as error:
        print(error)
"""


def test_the_core_decrypts_each_index_once_and_refuses_changed_inputs():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", STAGED_CALLS], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n")[:5] == ["('ok', True)", "('ok', False)", "('inputs', True)",
                                          "add_draw: the core is not initialized on a GPU",
                                          "time_call: a drawn call needs a GPU and an 8-byte sealed seed"]


@pytest.mark.parametrize("seed", [0, 7, 20260101, 2**63 + 5, 2**64 - 1])
def test_the_core_derives_the_generators_stream_keys(seed):
    """A drawn call's keys come from the core's BLAKE2b: the same as counter_rng's for any seed and name."""
    for name in ("a", "sfb", "sfa3", "x" * 40):
        assert _sealed.stream_keys(seed, name.encode()) == stream_keys(seed, name)


def test_the_seed_reaches_the_core_masked_once_per_index():
    """The parent's mask is the first 8 bytes of the core's HMAC under the staging key, per call index:
    the core recovers the seed; the same seed reads differently at another index."""
    key, seed = os.urandom(32), 2**63 + 12345
    sealed = {index: input_stage.sealed_seed(key, index, seed) for index in (3, 4)}
    for index, masked in sealed.items():
        pad = _sealed.hmac_sha256(input_stage.stage_key(key), b"seed:" + index.to_bytes(8, "little"))
        assert int.from_bytes(masked, "little") ^ int.from_bytes(pad[:8], "little") == seed
    assert sealed[3] != sealed[4] and seed.to_bytes(8, "little") not in sealed.values()


class Launches:
    """Stands in for the generator's Triton kernels: records the table each launch reads."""

    def __init__(self) -> None:
        self.tables: list[torch.Tensor] = []

    def __getitem__(self, grid):
        return lambda table, *args, **kwargs: self.tables.append(table)


def test_a_captured_draw_with_the_cores_keys_is_the_seeds_draw(monkeypatch):
    """What a drawn call's replay reads: the captured tables' rows, with each named row's key words
    written as the core writes them (drawn_inputs.c) for the call's seed, are the tables an ordinary draw
    under that seed launches with."""
    from problems.shared import counter_rng, kernel_tables

    launches = Launches()
    monkeypatch.setattr(counter_rng, "_triton_kernels", lambda: (launches, launches))
    streams, seed = [("a", 40), ("empty", 0), ("sfa", 8)], 2**64 - 3
    with kernel_tables.captured_tables() as capture:
        counter_rng._words_triton(0, streams, torch.device("cpu"))
    counter_rng._words_triton(seed, streams, torch.device("cpu"))
    (table, rows, keyed), = capture.tables
    assert table is launches.tables[0] and sorted(keyed.values()) == ["a", "sfa"]
    replayed = torch.tensor(rows, dtype=torch.int64).view(torch.uint8).flatten()
    for offset, name in keyed.items():
        replayed[offset:offset + 16] = torch.tensor(_sealed.stream_keys(seed, name.encode()),
                                                    dtype=torch.int64).view(torch.uint8)
    ordinary = launches.tables[1]
    assert torch.equal(replayed.view(torch.int64).view(ordinary.shape)[:, 1:], ordinary[:, 1:])  # addresses differ
