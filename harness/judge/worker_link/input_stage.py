"""Staged inputs: a ranked call's inputs, drawn by the parent and handed to the worker's core encrypted.

In ranked mode the worker never learns a timed call's seed: the parent draws the call's inputs itself
(it draws them for its check anyway), encrypts every tensor's storage bytes with ChaCha20 under the
run's staging key and a nonce naming the call index, and writes them into a sealed file it handed
over at spawn (``new_stage_file``; the worker holds a read-only descriptor). The worker builds the
call's tensors from a draw under the case's public seed, and its compiled core decrypts the real bytes
into them inside ``time_call``, after the last Python of the submission's can run before the timer
(harness/worker/csrc/staged_inputs.c; docs/security.md, "Staged inputs").
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
from typing import Any

import torch

from harness.contract.output_file import FILE_BYTES

STAGE_ALIGN = 64
"""Each tensor's bytes start at a multiple of one ChaCha20 block (staged_inputs.h: STAGE_ALIGN)."""
STAGE_KEY_LABEL = b"nvfp4 staged inputs"


def stage_key(key: bytes) -> bytes:
    """The staging key, derived from the run's MAC key; it follows the MAC key through the key pipe."""
    return hmac.new(key, STAGE_KEY_LABEL, hashlib.sha256).digest()


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


def tensors_of(tree: Any) -> list[torch.Tensor]:
    """Every tensor of a call's inputs, in the order the worker hands them to its core."""
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in tensors_of(item)]
    return []


def _storage_bytes(tensor: torch.Tensor) -> memoryview:
    host = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage()).cpu()
    return memoryview(host.numpy())


def stage(fd: int, key: bytes, index: int, inputs: Any) -> None:
    """Write call ``index``'s inputs, encrypted, into the staging file: every tensor's whole storage,
    each from the next multiple of STAGE_ALIGN, under block counter offset / STAGE_ALIGN. OpenSSL's
    ChaCha20 (through ``cryptography``): GB/s, where numpy's would take a second for a GEMV's inputs."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms  # only where a call is staged

    at = 0
    for tensor in tensors_of(inputs):
        plain = _storage_bytes(tensor)
        counter = (at // STAGE_ALIGN).to_bytes(4, "little")
        encrypted = Cipher(algorithms.ChaCha20(key, counter + nonce(index)), mode=None).encryptor().update(plain)
        written = 0
        while written < len(encrypted):
            written += os.pwrite(fd, memoryview(encrypted)[written:], at + written)
        at += -(-len(plain) // STAGE_ALIGN) * STAGE_ALIGN
