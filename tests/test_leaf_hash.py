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


def _kernel_leaves(data: bytes) -> list[bytes]:
    count = leaf_hash.leaf_count(len(data))
    out_at = 16 * (len(data) // 16 + 1)
    memory = bytearray(data) + bytearray(out_at - len(data) + 32 * count)
    launch(leaf_hash.ptx(), memory, {"data": 0, "nbytes": len(data), "out": out_at}, count + 1)
    return [bytes(memory[out_at + 32 * i:out_at + 32 * (i + 1)]) for i in range(count)]


@pytest.mark.parametrize("length", LENGTHS)
def test_kernel_leaves_are_sha256_of_each_piece(length: int) -> None:
    data = os.urandom(length)
    expected = [hashlib.sha256(data[at:at + leaf_hash.LEAF_BYTES]).digest()
                for at in range(0, length, leaf_hash.LEAF_BYTES)]
    assert _kernel_leaves(data) == expected
    assert leaf_hash.cpu_leaves(memoryview(data)) == expected


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
