"""The counter-based generator: its hash against a pure-Python one, its streams, its distributions.

Bit identity between the CPU and CUDA is checked on a GPU by ``scripts/check_input_digests.py
--device cuda``; here the same integer function is pinned down against an independent
implementation, so the stored digests and the GPU check compare against a known function, and
the fused Triton kernels of the CUDA path are run by Triton's CPU interpreter against the torch
definition.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import oracle
import oracle_fp8
import pytest
import torch

from problems.shared import counter_rng as rng
from problems.shared import draw_kernels, permuted_scales

MASK = 0xFFFFFFFF


def lowbias32(x: int) -> int:
    """Chris Wellons' lowbias32 on Python integers, written from its published definition."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK
    return x ^ (x >> 16)


def expected_word(seed: int, name: str, index: int) -> int:
    key = int.from_bytes(hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest(), "little")
    return lowbias32(lowbias32(index ^ (key & MASK)) ^ (key >> 32))


def unsigned(words: torch.Tensor) -> list[int]:
    return [w & MASK for w in words.tolist()]


def chi_square(counts: torch.Tensor, expected: torch.Tensor) -> float:
    return float(((counts.double() - expected) ** 2 / expected).sum())


def chi_square_bound(bins: int) -> float:
    """Mean plus 8 standard deviations of a chi-square with bins - 1 degrees of freedom."""
    dof = bins - 1
    return dof + 8 * math.sqrt(2 * dof)


# --- the hash ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 7, 2**63 - 1])
def test_words_are_the_documented_hash(seed):
    count = 3 * rng.CPU_CHUNK_WORDS + 5  # several CPU pieces and a ragged end
    words = rng.random_words(seed, [("a", count)], "cpu")[0]
    assert words.dtype == torch.int32
    checked = [*range(200), *range(count - 200, count)]
    got = unsigned(words[checked])
    assert got == [expected_word(seed, "a", i) for i in checked]


def test_batched_and_piecewise_evaluations_agree():
    streams = [("a", 2 * rng.CPU_CHUNK_WORDS + 3), ("sfa", 17), ("b[3]", rng.CPU_CHUNK_WORDS), ("sfb[3]", 1)]
    piecewise = rng._words_on_cpu(11, streams)
    batched = rng._words_batched(11, streams, torch.device("cpu"))
    assert [w.shape[0] for w in batched] == [count for _, count in streams]
    assert all(torch.equal(x, y) for x, y in zip(piecewise, batched))
    # Each stream owns its storage: the worker's aliasing check treats shared storage as an alias.
    pointers = {w.untyped_storage().data_ptr() for w in batched}
    assert len(pointers) == len(streams)


def test_a_streams_words_ignore_the_other_streams():
    alone = rng.random_words(5, [("a", 1000)], "cpu")[0]
    crowded = rng.random_words(5, [("b", 3 * rng.CPU_CHUNK_WORDS), ("a", 2000), ("sfa", 9)], "cpu")[1]
    assert torch.equal(crowded[:1000], alone)


def test_bytes_are_the_words_little_endian():
    words = rng.random_words(3, [("x", 4)], "cpu")[0]
    data = rng.words_to_bytes(words, (2, 7))
    expected = [(w >> (8 * j)) & 0xFF for w in unsigned(words) for j in range(4)][:14]
    assert data.dtype == torch.uint8 and data.reshape(-1).tolist() == expected
    with pytest.raises(ValueError, match="4 words hold 16 bytes, 17"):
        rng.words_to_bytes(words, (17,))


def test_stream_size_is_bounded_before_anything_is_allocated():
    with pytest.raises(ValueError, match="at most 4294967296"):
        rng.random_words(1, [("a", rng.MAX_WORDS + 1)], "cpu")


# --- byte statistics --------------------------------------------------------------------------

SAMPLE_WORDS = 1 << 18


def sample_bytes(seed: int, name: str) -> torch.Tensor:
    return rng.words_to_bytes(rng.random_words(seed, [(name, SAMPLE_WORDS)], "cpu")[0], (4 * SAMPLE_WORDS,))


def test_bytes_are_uniform():
    data = sample_bytes(1, "a").long()
    counts = torch.bincount(data, minlength=256)
    assert chi_square(counts, torch.full((256,), data.numel() / 256)) < chi_square_bound(256)


def test_neighbouring_bytes_are_independent():
    data = sample_bytes(2, "a").long()
    pairs = (data[:-1] >> 4) * 16 + (data[1:] >> 4)  # high nibbles of neighbours
    counts = torch.bincount(pairs, minlength=256)
    assert chi_square(counts, torch.full((256,), pairs.numel() / 256)) < chi_square_bound(256)


@pytest.mark.parametrize(("first", "second"), [((4, "a"), (4, "b")), ((4, "a"), (5, "a")), ((4, "a"), (4, "sfa"))])
def test_streams_are_independent(first, second):
    x, y = sample_bytes(*first).long(), sample_bytes(*second).long()
    joint = torch.bincount((x >> 4) * 16 + (y >> 4), minlength=256)
    assert chi_square(joint, torch.full((256,), x.numel() / 256)) < chi_square_bound(256)
    assert abs(float((x == y).double().mean()) - 1 / 256) < 0.001


def test_a_broken_hash_fails_these_statistics(monkeypatch):
    """The statistics above can fail: a hash without its multiplies is visibly non-uniform."""
    monkeypatch.setattr(rng, "_mul32", lambda x, constant: x)
    data = sample_bytes(1, "a").long()
    pairs = (data[:-1] >> 4) * 16 + (data[1:] >> 4)
    counts = torch.bincount(pairs, minlength=256)
    assert chi_square(counts, torch.full((256,), pairs.numel() / 256)) > chi_square_bound(256)


# --- scales -----------------------------------------------------------------------------------

RANGES = [(-8.0, 0.0), (-9.0, -1.0)]
E8M0_RANGES = [(-12.0, -4.0), (-127.0, 127.0)]


def definition_code(word: int, log2_min: float, log2_max: float) -> int:
    """The scale of word r by the documented definition, through the float64 oracle."""
    u = log2_min + (log2_max - log2_min) * (word + 0.5) / 2**32
    return oracle.e4m3_nearest(2.0**u)


@pytest.mark.parametrize(("log2_min", "log2_max"), RANGES)
def test_scale_codes_follow_the_definition(log2_min, log2_max):
    table = rng.ScaleTable.build(log2_min, log2_max)
    edges = {t + d for t in table.thresholds for d in (-1, 0) if 0 < t < 2**32}
    words = sorted(edges | {0, 2**32 - 1} | set(unsigned(rng.random_words(9, [("s", 2000)], "cpu")[0])))
    signed = torch.tensor([w - 2**32 if w >= 2**31 else w for w in words], dtype=torch.int32)
    got = table.codes(signed).tolist()
    assert got == [definition_code(w, log2_min, log2_max) for w in words]


@pytest.mark.parametrize(("log2_min", "log2_max"), RANGES)
def test_scale_frequencies_match_the_table(log2_min, log2_max):
    table = rng.ScaleTable.build(log2_min, log2_max)
    words = rng.random_words(3, [("sfa", SAMPLE_WORDS)], "cpu")[0]
    codes = table.codes(words).long()
    bounds = [0, *table.thresholds, 2**32]
    probability = torch.tensor([(hi - lo) / 2**32 for lo, hi in itertools.pairwise(bounds)], dtype=torch.float64)
    support = probability > 0
    counts = torch.bincount(codes - 1, minlength=len(probability))
    assert int(counts[~support].sum()) == 0, "codes outside the distribution's support"
    assert chi_square(counts[support], probability[support] * codes.numel()) < chi_square_bound(int(support.sum()))
    # The support: every e4m3 value from the one nearest 2^log2_min to the one nearest 2^log2_max,
    # subnormals included.
    lowest, highest = oracle.e4m3_nearest(2.0**log2_min), oracle.e4m3_nearest(2.0**log2_max)
    assert support.nonzero().flatten().add(1).tolist() == list(range(lowest, highest + 1))
    assert oracle.e4m3_is_subnormal(lowest)


@pytest.mark.parametrize("bounds", [(0.0, -8.0), (-12.0, 0.0), (0.0, 10.0)])
def test_scale_ranges_outside_e4m3_are_refused(bounds):
    with pytest.raises(ValueError, match="scale_log2"):
        rng.ScaleTable.build(*bounds)


@pytest.mark.parametrize(("log2_min", "log2_max"), E8M0_RANGES)
def test_e8m0_scale_codes_are_the_power_of_two_nearest_2_to_the_u(log2_min, log2_max):
    """The same table, over e8m0's 255 values: the nearest power of two (linear distance)."""
    table = rng.ScaleTable.build(log2_min, log2_max, torch.float8_e8m0fnu)
    assert table.first_code == 0 and len(table.thresholds) == 254
    edges = {t + d for t in table.thresholds for d in (-1, 0) if 0 < t < 2**32}
    words = sorted(edges | {0, 2**32 - 1} | set(unsigned(rng.random_words(9, [("s", 2000)], "cpu")[0])))
    signed = torch.tensor([w - 2**32 if w >= 2**31 else w for w in words], dtype=torch.int32)
    expected = []
    for word in words:
        u = log2_min + (log2_max - log2_min) * (word + 0.5) / 2**32
        expected.append(oracle_fp8.e8m0_nearest(2.0**u))
    assert table.codes(signed).tolist() == expected
    assert table.scales([signed], [(len(words),)])[0].dtype == torch.float8_e8m0fnu


def test_e8m0_scale_frequencies_match_the_table():
    table = rng.ScaleTable.build(-12.0, -4.0, torch.float8_e8m0fnu)
    codes = table.codes(rng.random_words(4, [("sfa", SAMPLE_WORDS)], "cpu")[0]).long()
    bounds = [0, *table.thresholds, 2**32]
    probability = torch.tensor([(hi - lo) / 2**32 for lo, hi in itertools.pairwise(bounds)], dtype=torch.float64)
    support = probability > 0
    assert support.nonzero().flatten().tolist() == list(range(127 - 12, 127 - 4 + 1))  # 2^-12 .. 2^-4
    counts = torch.bincount(codes, minlength=len(probability))
    assert int(counts[~support].sum()) == 0
    assert chi_square(counts[support], probability[support] * codes.numel()) < chi_square_bound(int(support.sum()))


def test_scale_tables_exist_for_e4m3_and_e8m0_only():
    with pytest.raises(ValueError, match="scale tables exist for"):
        rng.ScaleTable.build(-8.0, 0.0, torch.float32)
    with pytest.raises(ValueError, match="scale_log2"):
        rng.ScaleTable.build(-130.0, 0.0, torch.float8_e8m0fnu)


# --- the fused Triton kernels of the CUDA path, under Triton's CPU interpreter -----------------

ROOT = Path(__file__).resolve().parent.parent
BLOCK = rng.TRITON_BLOCK_WORDS  # codes_kernel's
HASH = rng.HASH_BLOCK_WORDS  # hash_kernel's: counts at and around its block edges
KEY_PAIRS = [(0, 0), (1, 1), (2**31 - 1, 2**31), (2**31, 2**32 - 1), (2**32 - 1, 0), (0x9E3779B9, 0x7F4A7C15)]
COUNTS = [1, HASH - 1, HASH, HASH + 1, 3 * HASH + 7]
SEEDS = [0, 7, 11, 2**63 - 2, 2**63 - 1]
STREAMS = [("a", 2 * HASH + 3), ("sfa", 17), ("b[3]", HASH), ("sfb[3]", 1), ("c", 0)]

# TRITON_INTERPRET must be set before triton is imported, and another test in this process may
# already have imported it without: the kernels run in a subprocess, which reports sha256s.
TRITON_WORKER = r"""
import hashlib, json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, sys.argv[1])
import torch
from problems.shared import counter_rng as rng

keys, counts, seeds, streams, ranges = json.loads(sys.argv[2])
cpu = torch.device("cpu")
digest = lambda t: hashlib.sha256(t.numpy().tobytes()).hexdigest()
result = {"keys": [], "streams": [], "codes": []}
for k0, k1 in keys:
    result["keys"].append([digest(w) for w in rng._hash_triton([(count, k0, k1) for count in counts], cpu)])
for seed in seeds:
    words = rng._words_triton(seed, streams, cpu)
    result["streams"].append({
        "digests": [digest(w) for w in words],
        "dtypes": [str(w.dtype) for w in words],
        "shapes": [list(w.shape) for w in words],
        "storages": len({w.untyped_storage().data_ptr() for w in words if w.numel()}),
    })
for log2_min, log2_max, dtype, words in ranges:
    table = rng.ScaleTable.build(log2_min, log2_max, getattr(torch, dtype))
    below, inside = rng._device_buckets(table.thresholds, table.first_code, cpu)
    whole = torch.tensor(words, dtype=torch.int32)
    pieces = rng._codes_triton([whole[:7], whole[7:], whole[:0]], below, inside)  # ragged, and an empty one
    codes = torch.cat(pieces)
    result["codes"].append([str(codes.dtype), digest(codes)])
print(json.dumps(result))
"""


def digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.numpy().tobytes()).hexdigest()


def scale_words(log2_min: float, log2_max: float, dtype: str) -> list[int]:
    """int32 bit patterns: every threshold's edge, both ends, a ragged count of random words."""
    table = rng.ScaleTable.build(log2_min, log2_max, getattr(torch, dtype))
    edges = {t + d for t in table.thresholds for d in (-1, 0) if 0 < t < 2**32}
    words = sorted(edges | {0, 2**32 - 1} | set(unsigned(rng.random_words(9, [("s", 2 * BLOCK + 5)], "cpu")[0])))
    return [w - 2**32 if w >= 2**31 else w for w in words]


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_triton_kernels_equal_the_torch_definition():
    tables = [(lo, hi, "float8_e4m3fn") for lo, hi in RANGES] + [(lo, hi, "float8_e8m0fnu") for lo, hi in E8M0_RANGES]
    ranges = [(lo, hi, dtype, scale_words(lo, hi, dtype)) for lo, hi, dtype in tables]
    spec = json.dumps([KEY_PAIRS, COUNTS, SEEDS, STREAMS, ranges])
    run = subprocess.run(
        [sys.executable, "-c", TRITON_WORKER, str(ROOT), spec], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])

    # Keys at and beyond 2^31 (int32 bit patterns inside the kernel), ragged counts.
    for (k0, k1), got in zip(KEY_PAIRS, result["keys"], strict=True):
        expected = [digest(rng.hash_words(torch.arange(count, dtype=torch.int64), k0, k1)) for count in COUNTS]
        assert got == expected, f"keys {k0:#x}, {k1:#x}"

    # Whole draws: the same words as the CPU path, one tensor with its own storage per stream.
    keys = [rng.stream_keys(seed, name) for seed in SEEDS for name, _ in STREAMS]
    assert any(k0 >= 2**31 for k0, _ in keys) and any(k1 >= 2**31 for _, k1 in keys)
    for seed, got in zip(SEEDS, result["streams"], strict=True):
        expected = rng._words_on_cpu(seed, STREAMS)
        assert got["digests"] == [digest(w) for w in expected], f"seed {seed}"
        assert got["dtypes"] == ["torch.int32"] * len(STREAMS)
        assert got["shapes"] == [[count] for _, count in STREAMS]
        assert got["storages"] == sum(1 for _, count in STREAMS if count)

    # Scale codes: every threshold edge and random words, against the torch lookup.
    for (lo, hi, fmt, words), (dtype, got) in zip(ranges, result["codes"], strict=True):
        expected = rng.ScaleTable.build(lo, hi, getattr(torch, fmt)).codes(torch.tensor(words, dtype=torch.int32))
        assert dtype == "torch.uint8" and got == digest(expected), f"{fmt} scale range [{lo}, {hi}]"


@pytest.mark.parametrize("writable", [True, False])
def test_an_unwritable_home_gets_a_private_triton_cache(tmp_path, monkeypatch, writable):
    """An evaluator run as another user than HOME's owner (the H100's unprivileged row) still compiles."""
    from reference import triton_cache

    monkeypatch.setenv("TRITON_CACHE_DIR", "")  # restored (removed) after the test, whatever it sets
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "not" / "made"))
    checked = []
    monkeypatch.setattr(triton_cache.os, "access", lambda path, mode: checked.append(Path(path)) or writable)
    triton_cache.writable_triton_cache()
    assert checked == [tmp_path]  # the nearest folder that exists
    if writable:
        assert not os.environ["TRITON_CACHE_DIR"]
    else:
        assert Path(os.environ["TRITON_CACHE_DIR"]).is_dir()


def test_the_private_triton_cache_is_one_folder_per_user_and_refuses_a_planted_one(tmp_path, monkeypatch):
    """Compiled launchers are loaded from the cache: a folder another user made or can write is never used."""
    from reference import triton_cache

    monkeypatch.setattr(triton_cache.tempfile, "gettempdir", lambda: str(tmp_path))
    first = triton_cache._private_cache_folder()
    assert first == triton_cache._private_cache_folder() == tmp_path / f"nvfp4-triton-{os.getuid()}"
    assert first.stat().st_mode & 0o777 == 0o700
    first.chmod(0o777)  # as if planted for us by someone else
    planted = triton_cache._private_cache_folder()
    assert planted != first and planted.parent == Path(triton_cache.tempfile.gettempdir())


def test_a_home_that_cannot_even_be_searched_gets_a_private_triton_cache(monkeypatch):
    from reference import triton_cache

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setenv("TRITON_CACHE_DIR", "")  # restored (removed) after the test, whatever it sets
    monkeypatch.setattr(triton_cache.Path, "exists", refuse)
    triton_cache.writable_triton_cache()
    assert Path(os.environ["TRITON_CACHE_DIR"]).is_dir()


def test_every_draw_kernel_and_its_launcher_is_built_without_a_gpu(monkeypatch, tmp_path):
    """What a blank worker does before its file comes (harness/worker/compile_ahead.py): the generator's two
    kernels and the permute kernel compiled for sm_90 and their launchers built, with no CUDA device (the
    JIT's questions answered)."""
    pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    launchers = []

    class Answering:
        get_current_device = staticmethod(lambda: 0)
        get_current_stream = staticmethod(lambda device=None: 0)
        get_current_target = staticmethod(lambda: GPUTarget("cuda", 90, 32))
        launcher_cls = staticmethod(lambda src, metadata: launchers.append(metadata.name))

    monkeypatch.setattr(type(driver), "active", property(lambda _: Answering))
    try:
        compiled = draw_kernels.compile_all()
    finally:
        for kernel in [*rng._triton_kernels(), permuted_scales._kernel()]:
            kernel.device_caches.clear()  # the answered target must not outlive the test
    assert [kernel.metadata.name for kernel in compiled] == ["hash_kernel", "codes_kernel", "permute_kernel"]
    assert launchers == [kernel.metadata.name for kernel in compiled]
    assert all(kernel.metadata.target.arch == 90 for kernel in compiled)
    assert [kernel.metadata.num_warps for kernel in compiled] == [
        rng.HASH_OPTIONS["num_warps"], 4, permuted_scales.PERMUTE_OPTIONS["num_warps"]]
