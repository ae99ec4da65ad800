"""The permute kernel (problems/shared/permuted_scales.py) against the layout's definition, to_permuted.

The kernel runs under the Triton interpreter on the CPU, in a subprocess (TRITON_INTERPRET must be set before
triton is imported), over shapes that cover the padding (rows short of 128, columns short of 4), several
batches, several tiles each way, one launch for operands of different sizes, and a block edge of the kernel.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from problems.shared import permuted_scales
from reference.layouts import to_permuted

ROOT = Path(__file__).resolve().parent.parent
BLOCK = permuted_scales.PERMUTE_OPTIONS["BLOCK"]
# (rows, cols, L): ragged rows and columns (padding), whole tiles, several batches and tiles each way, one
# whose permuted storage is BLOCK + 512 bytes (a second program with a ragged end).
SHAPES = [(1, 1, 1), (40, 7, 1), (128, 4, 1), (129, 5, 2), (256, 16, 3), (300, 9, 4), (BLOCK // 4 + 128, 4, 1)]

KERNEL_RUN = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "tests")]
import torch
from problems.shared import permuted_scales
from test_permuted_scales import scales_of

out = permuted_scales.permuted_triton(scales_of(json.loads(sys.argv[2])))
print(json.dumps([{"shape": list(p.shape), "stride": list(p.stride()), "dtype": str(p.dtype),
                   "bytes": p.view(torch.uint8).permute(5, 2, 4, 0, 1, 3).contiguous().flatten().tolist()}
                  for p in out]))
"""


def scales_of(shapes: list[tuple[int, int, int]]) -> list[torch.Tensor]:
    """(rows, cols, L) e4m3 views of (L, rows, cols) storage, seeded: the subprocess draws the same ones."""
    generator = torch.Generator().manual_seed(5)
    return [torch.randint(0, 256, (l, r, c), dtype=torch.uint8, generator=generator).permute(1, 2, 0)
            .view(torch.float8_e4m3fn) for r, c, l in shapes]


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_the_kernel_writes_what_to_permuted_defines_padding_included():
    run = subprocess.run([sys.executable, "-c", KERNEL_RUN, str(ROOT), json.dumps(SHAPES)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for shape, sf, result in zip(SHAPES, scales_of(SHAPES), got, strict=True):
        expected = to_permuted(sf)
        assert result["shape"] == list(expected.shape) and result["stride"] == list(expected.stride()), shape
        assert result["dtype"] == str(expected.dtype), shape
        in_order = expected.view(torch.uint8).permute(5, 2, 4, 0, 1, 3).contiguous().flatten().tolist()
        assert result["bytes"] == in_order, shape


def test_off_cuda_the_definition_itself_is_used():
    scales = scales_of([(40, 7, 2), (128, 4, 1)])
    for sf, layout in zip(scales, permuted_scales.permuted(scales), strict=True):
        assert torch.equal(layout.view(torch.uint8), to_permuted(sf).view(torch.uint8))


def test_scales_the_kernel_cannot_take_go_through_the_definition():
    plain = torch.zeros(4, 8, 2, dtype=torch.uint8)  # (rows, cols, L) storage, not a view of (L, rows, cols)
    assert not permuted_scales._fits(plain)
    assert permuted_scales._fits(torch.zeros(2, 4, 8, dtype=torch.uint8).permute(1, 2, 0))
    assert not permuted_scales._fits(torch.zeros(2, 4, 8, dtype=torch.int16).permute(1, 2, 0))
    assert not permuted_scales._fits(torch.zeros(2, 0, 8, dtype=torch.uint8).permute(1, 2, 0))  # empty: torch's strides
    # The last program's block must end inside int32: a permuted storage of 2^31 - BLOCK bytes fits, one tile more not.
    rows = (2**31 - BLOCK) // 512 * 128  # whole tiles of 128 rows x 4 columns, 512 bytes each
    assert permuted_scales._fits(torch.empty(1, rows, 4, dtype=torch.uint8, device="meta").permute(1, 2, 0))
    assert not permuted_scales._fits(torch.empty(1, rows + 128, 4, dtype=torch.uint8, device="meta").permute(1, 2, 0))
