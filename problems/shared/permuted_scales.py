"""A draw's scales in the permuted layout CuTe kernels take, every operand's at once.

``reference/layouts.to_permuted`` defines the layout in torch: per operand a zero pad (where rows or
columns fall short of whole 128 x 4 tiles) and a strided copy, up to three kernels each; the grouped
GEMM's draw of 16 operands spent 84.5 us of the H100 in them (docs/results.md run 34, call 9), on the way
to every timed call (the core waits for the draw before custom_kernel). On CUDA one Triton kernel
(problems/shared/layout_kernels.py) writes all of a draw's permuted bytes instead, padding included;
the bytes are the same (tests/test_permuted_scales.py holds it against ``to_permuted`` under the Triton
interpreter, and the stored input digests hold both routes).
"""

from __future__ import annotations

import functools
import math

import torch

from problems.shared.kernel_tables import device_table, launch_grid, on_device
from reference.layouts import TILE_COLS, TILE_ROWS, ceil_div, to_permuted
from reference.triton_cache import prepare_triton

PERMUTE_OPTIONS = {"BLOCK": 4096, "num_warps": 4}
"""permute_kernel's constants and launch options: every launch and the compile ahead take them."""


@functools.cache
def _kernel():
    """The permute kernel, imported on first use; None where triton cannot be imported."""
    prepare_triton()
    try:
        from problems.shared.layout_kernels import permute_kernel
    except ImportError:
        return None
    return permute_kernel


def _uses_kernel(device: torch.device) -> bool:
    """Whether scales on ``device`` are permuted by the kernel: CUDA, with triton importable."""
    return device.type == "cuda" and _kernel() is not None


def _storage_shape(sf: torch.Tensor) -> tuple[int, int, int, int, int, int]:
    """(L, rest_mn, rest_k, 32, 4, 4): the permuted storage of (rows, cols, L) scales."""
    rows, cols, batches = sf.shape
    return (batches, ceil_div(rows, TILE_ROWS), ceil_div(cols, TILE_COLS), 32, 4, TILE_COLS)


def _fits(sf: torch.Tensor) -> bool:
    """Whether the kernel takes ``sf``: non-empty (rows, cols, L) bytes viewing (L, rows, cols) storage, and a
    permuted storage whose byte offsets, up to the last program's block end, fit int32 (the kernel's index
    arithmetic). An empty one goes to ``to_permuted``, whose strides for it are torch's (the digests cover
    strides)."""
    return (sf.dim() == 3 and sf.numel() > 0 and sf.element_size() == 1 and sf.permute(2, 0, 1).is_contiguous()
            and math.prod(_storage_shape(sf)) <= 2**31 - PERMUTE_OPTIONS["BLOCK"])


def permuted_triton(scales: list[torch.Tensor]) -> list[torch.Tensor]:
    """``to_permuted`` of each (rows, cols, L) scale tensor that ``_fits``, all by one launch of the kernel
    on their device (the CUDA route; on the CPU only under ``TRITON_INTERPRET=1``, which the tests use)."""
    stores = [torch.empty(_storage_shape(sf), dtype=torch.uint8, device=sf.device) for sf in scales]
    rows = [(sf.data_ptr(), store.data_ptr(), sf.shape[0], sf.shape[1], store.shape[1], store.shape[2],
             store.numel()) for sf, store in zip(scales, stores)]
    if rows:
        device = scales[0].device
        with on_device(device):
            _kernel()[launch_grid(rows, 6, PERMUTE_OPTIONS["BLOCK"])](device_table(rows, device), **PERMUTE_OPTIONS)
    return [store.permute(3, 4, 1, 5, 2, 0).view(sf.dtype) for sf, store in zip(scales, stores)]


def permuted(scales: list[torch.Tensor]) -> list[torch.Tensor]:
    """``to_permuted`` of each (rows, K/16, L) scale tensor: on CUDA those the kernel takes by one launch for
    all of them, the others (and every one elsewhere) by ``to_permuted`` itself."""
    out = {}
    if scales and _uses_kernel(scales[0].device):
        taken = [i for i, sf in enumerate(scales) if _fits(sf)]
        out = dict(zip(taken, permuted_triton([scales[i] for i in taken])))
    return [out[i] if i in out else to_permuted(sf) for i, sf in enumerate(scales)]


def compile_kernel() -> list:
    """The permute kernel compiled for the active Triton driver's target, with its launcher, without running
    it (as counter_rng.compile_kernels); [] without triton."""
    kernel = _kernel()
    if kernel is None:
        return []
    from triton.runtime import driver

    compiled = kernel.warmup(torch.int64, grid=(1,), **PERMUTE_OPTIONS)
    driver.active.launcher_cls(compiled.src, compiled.metadata)
    return [compiled]
