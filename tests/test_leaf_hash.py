"""The output digest's leaf kernel (harness/contract/leaf_hash.py), checked on the CPU: its PTX text run
by an interpreter of the subset it uses against hashlib at every length that matters to SHA-256's
padding and the leaf boundary, and assembled by ptxas (triton's) for the GPUs it must load on."""

from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess

import pytest
import triton

from harness.contract import leaf_hash
from tests.ptx_interpreter import launch

LENGTHS = [0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 4095, 4096, 4097, 2 * 4096 + 300]


def _kernel_leaves(blobs: list[bytes]) -> list[bytes]:
    """Every blob's leaves by one launch of the kernel (its table, then the blobs at 16-byte places)."""
    places, at = [], 64 * 8 * leaf_hash.TABLE_ENTRY_WORDS
    for blob in blobs:
        places.append(at)
        at += 16 * (len(blob) // 16 + 1)
    words, count = leaf_hash.table([(place, len(blob)) for place, blob in zip(places, blobs)])
    memory = bytearray(at + 32 * count)
    memory[:8 * len(words)] = b"".join(word.to_bytes(8, "little") for word in words)
    for place, blob in zip(places, blobs):
        memory[place:place + len(blob)] = blob
    launch(leaf_hash.ptx(), memory, {"table": 0, "count": len(blobs), "out": at}, count + 1)
    return [bytes(memory[at + 32 * i:at + 32 * (i + 1)]) for i in range(count)]


def _expected(blob: bytes) -> list[bytes]:
    pieces = range(0, len(blob), leaf_hash.LEAF_BYTES)
    return [hashlib.sha256(blob[at:at + leaf_hash.LEAF_BYTES]).digest() for at in pieces]


@pytest.mark.parametrize("length", LENGTHS)
def test_kernel_leaves_are_sha256_of_each_piece(length: int) -> None:
    data = os.urandom(length)
    assert _kernel_leaves([data]) == _expected(data)
    assert leaf_hash.cpu_leaves(memoryview(data)) == _expected(data)


def test_one_launch_hashes_every_output_in_order() -> None:
    """Outputs of several sizes (an empty one among them) in one table: each leaf from its own output."""
    blobs = [os.urandom(n) for n in (5000, 0, 64, 4096, 1)]
    assert _kernel_leaves(blobs) == [leaf for blob in blobs for leaf in _expected(blob)]


def test_constants_are_fips_180_4() -> None:
    assert leaf_hash.ROUND_CONSTANTS[:2] == (0x428A2F98, 0x71374491)
    assert leaf_hash.ROUND_CONSTANTS[-1] == 0xC67178F2
    assert leaf_hash.INITIAL_STATE == (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C,
                                       0x1F83D9AB, 0x5BE0CD19)


@pytest.mark.parametrize("arch", ["sm_70", "sm_90"])
def test_ptx_assembles(arch: str, tmp_path: pathlib.Path) -> None:
    ptxas = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    assert ptxas.exists(), f"triton's ptxas is not at {ptxas}"
    source = tmp_path / "leaf.ptx"
    source.write_text(leaf_hash.ptx())
    done = subprocess.run([str(ptxas), f"-arch={arch}", "-v", str(source), "-o", str(tmp_path / "leaf.cubin")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores" in done.stderr
