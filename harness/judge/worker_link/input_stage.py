"""Ranked calls' inputs out of the worker's Python: a GPU's seed masked for its core, a CPU's staged.

In ranked mode the worker never learns a timed call's seed. On a GPU its compiled core draws the inputs
itself, from the case's draw captured as a CUDA graph before the import; the parent sends each call's
seed masked under the run's staging key (``sealed_seed``; harness/worker/csrc/drawn_inputs.c;
docs/security.md, "Drawn and staged inputs"); the core draws benchmark mode's timed calls the same way,
their public seeds masked alike (one path). On the CPU, which has no graphs, the parent draws the
call's inputs itself (it draws them for its check anyway), encrypts every tensor's storage bytes with
ChaCha20 (its own, ``chacha20.py``) under the staging key and a nonce naming the call index, and writes
them into a sealed file it handed over at spawn (``new_stage_file``; the worker holds a read-only
descriptor). The worker builds the call's tensors from a draw under the case's public seed, and its
compiled core decrypts the real bytes into them inside ``time_call``
(harness/worker/csrc/staged_inputs.c).
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
from typing import Any

from harness.contract.output_file import FILE_BYTES
from harness.contract.tensor_tree import storage_bytes, tensors_in

STAGE_ALIGN = 64
"""Each tensor's bytes start at a multiple of one ChaCha20 block (staged_inputs.h: STAGE_ALIGN)."""
STAGE_KEY_LABEL = b"nvfp4 staged inputs"


def stage_key(key: bytes) -> bytes:
    """The staging key, derived from the run's MAC key; it follows the MAC key through the key pipe."""
    return hmac.new(key, STAGE_KEY_LABEL, hashlib.sha256).digest()


def sealed_seed(key: bytes, index: int, seed: int) -> bytes:
    """Call ``index``'s seed as the worker's core reads it (drawn_inputs.c: replay_draw): XOR the first 8
    bytes of HMAC-SHA256(staging key, "seed:" and the index), a pad used for that index only."""
    pad = hmac.new(stage_key(key), b"seed:" + index.to_bytes(8, "little", signed=True), hashlib.sha256).digest()
    return (seed ^ int.from_bytes(pad[:8], "little")).to_bytes(8, "little")


def nonce(index: int) -> bytes:
    """ChaCha20's 96-bit nonce for call ``index`` (staged_inputs.c: "stg:" and the index, little-endian)."""
    return b"stg:" + index.to_bytes(8, "little", signed=True)


def new_stage_file() -> tuple[int, int] | None:
    """(the parent's read-write descriptor, the worker's read-only one) of a new staging file, or None
    where the system has no memfd. Sized and sealed as the output file: the worker can neither grow nor
    shrink it, nor write it (a ciphertext it changed would decrypt to noise and fail the check anyway)."""
    if not hasattr(os, "memfd_create") or not hasattr(fcntl, "F_ADD_SEALS"):
        return None
    fd = os.memfd_create("nvfp4-inputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, FILE_BYTES)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    return fd, os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)


def stage(fd: int, key: bytes, index: int, inputs: Any) -> None:
    """Write call ``index``'s inputs, encrypted, into the staging file: every tensor's whole storage,
    each from the next multiple of STAGE_ALIGN, under block counter offset / STAGE_ALIGN. The core's own
    ChaCha20 in numpy (about 60 MB a second: a CPU's inputs are small; a GPU's are drawn by its core,
    ``sealed_seed``). Imported here, not at the top: this module is on the path that starts a worker,
    before the parent's heavy imports, and numpy would delay that worker by 50-120 ms (issue 33)."""
    from harness.judge.worker_link.chacha20 import chacha20

    at = 0
    for tensor in tensors_in(inputs):
        plain = memoryview(storage_bytes(tensor).cpu().numpy())
        encrypted = chacha20(key, nonce(index), at // STAGE_ALIGN, plain)
        written = 0
        while written < len(encrypted):
            written += os.pwrite(fd, memoryview(encrypted)[written:], at + written)
        at += -(-len(plain) // STAGE_ALIGN) * STAGE_ALIGN
