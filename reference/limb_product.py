"""The NVFP4 product on int8 tensor cores in three digits: the float64 result, exactly, at GEMM speed.

Every operand element times its block's scale is an exact integer multiple of 2^-10: an e2m1 value
doubled is an integer (|2a| <= 12) and an e4m3 scale an integer count u of 2^-9 (|u| <= 448 * 2^9), so
x = 2a * u = 2^10 * a * s is an int32 with |x| <= 12 * 448 * 2^9 < 2^22. Written in three signed
base-256 digits, x = d0 + 2^8 d1 + 2^16 d2 with d0, d1 in [-128, 127] and |d2| <= 42, every digit is an
int8. Then

    2^20 C[m, n] = sum_k xa[m, k] xb[n, k] = sum over digit pairs (i, j) of 2^(8 (i + j)) G_ij[m, n],

where G_ij = Da_i @ Db_j^T is an int8 GEMM with int32 accumulation: exact while K * 2^14 < 2^31
(``MAX_K``). One torch._int_mm of the digits stacked along rows, (3M, K) @ (K, 3N), gives all nine
G_ij at once (cuBLAS's int8 GEMM on a GPU); the nine are added with their shifts in int64 (exact: for
K < 2^17 the largest, 2^32 G_22, stays below 2^60 and their sum below 2^61) and converted to float64
once. The conversion is exact while
|C| < 2^33, the block kernel's and the float64 decode's own bound (reference/block_kernel.py:
``exact_bound``), so on every shipped task all three return the same bits; beyond it this route rounds
once, the others at each addition. A NaN scale (0x7F, 0xFF) makes its whole output row or column NaN,
as it does in the float64 decode.

What it costs: nine times the integer work of one GEMM, and three int8 bytes an operand element written
and read once; no float64 work but one conversion an output element. On the H100, replayed from a CUDA
graph (docs/results.md run 27 call 3): 0.17-0.70 ms on the GEMM's benchmark shapes, 0.34-0.99 on the
dual GEMM's, 0.31-1.79 on the grouped GEMM's, 1.4-2.8x faster than the block kernel on each. The choice
on CUDA where the shape fits (``fits``); the block kernel serves the rest (the GEMV's vector, ragged N).
Five launches a product: the rows' NaN flags zeroed, the two splits (which set them), the int8 GEMM and
the shifted sum, which also rounds to fp16 where asked (the GEMM and grouped GEMM's outputs). torch's
NaN tests and round_once's passes over the float64 result were at least eighteen launches more a
product, 0.05-0.51 ms a call of GPU time on those problems' benchmark shapes (docs/results.md run 32).
"""

from __future__ import annotations

import contextlib
import functools

import torch

from reference.formats import BLOCK_SIZE, as_bytes
from reference.triton_cache import prepare_triton

DIGITS = 3
"""Signed base-256 digits an operand element needs (|x| < 2^22)."""
MAX_K = 2**17 - 1
"""Largest K whose int32 accumulation of int8 digit products cannot overflow (K * 128^2 < 2^31)."""
MIN_STACKED_ROWS = 17
"""torch._int_mm takes an A of more than 16 rows (3M here)."""
SPLIT_TILE = (32, 128)
COMBINE_TILE = (64, 64)


@functools.cache
def _kernels():
    """(split_kernel, combine_kernel) of reference/limb_triton.py, imported on first use."""
    prepare_triton()
    from reference.limb_triton import combine_kernel, split_kernel

    return split_kernel, combine_kernel


def fits(rows_a: int, rows_b: int, k: int) -> bool:
    """Whether torch._int_mm takes this product's stacked digits (3M > 16 rows, 3N and K multiples of 8)
    and K keeps int32 exact: the GEMV's vector and ragged N go to the block kernel instead."""
    return 3 * rows_a >= MIN_STACKED_ROWS and rows_b % 8 == 0 and k % 8 == 0 and 0 < k <= MAX_K


def _digits(packed: torch.Tensor, scales: torch.Tensor, nan_rows: torch.Tensor) -> torch.Tensor:
    """(3 rows, K) int8 digit planes of one batch stacked along rows; ``nan_rows`` (int32, zeroed) gets a 1
    for each row whose scales hold a NaN."""
    rows, half_k = packed.shape
    k = 2 * half_k
    planes = torch.empty((3 * rows, k), dtype=torch.int8, device=packed.device)
    tile_r, tile_k = SPLIT_TILE
    grid = (-(-rows // tile_r), -(-k // tile_k))
    _kernels()[0][grid](packed, scales, planes, nan_rows, rows, k, packed.stride(0), scales.stride(0), rows * k,
                        BLOCK_R=tile_r, BLOCK_K=tile_k, num_warps=4)
    return planes


def limb_product(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor,
                 fp16: bool = False) -> torch.Tensor:
    """C (M, N, L) float64 = A (M, K, L) @ B (N, K, L)^T per batch, exactly (module docstring); ``fp16``: C
    rounded once to fp16 (reference/formats.py: round_once, the NVFP4 problems' output) in the kernel that
    adds the digit products, not by round_once's passes over the float64 result afterwards.

    ``a``/``b``: packed (rows, K/2, L) e2m1 (fp4x2 or uint8) with unit stride along K; ``sfa``/``sfb``:
    their (rows, K/16, L) e4m3 scales (or raw bytes), unit stride along K/16; the shape must ``fits``.
    """
    a, b, sfa, sfb = (as_bytes(a), as_bytes(b), sfa.view(torch.uint8), sfb.view(torch.uint8))
    rows_a, half_k, batches = a.shape
    rows_b, k = b.shape[0], 2 * half_k
    if any(t.stride(1) != 1 for t in (a, b, sfa, sfb)) or sfa.shape[1] * BLOCK_SIZE != k:
        raise ValueError(f"limb_product takes K-contiguous operands with K/16 scales; got A {tuple(a.shape)} "
                         f"strides {a.stride()}, scales {tuple(sfa.shape)}")
    if not fits(rows_a, rows_b, k):
        raise ValueError(f"limb_product does not take M={rows_a}, N={rows_b}, K={k} (reference/limb_product.fits)")
    out = torch.empty((batches, rows_a, rows_b), dtype=torch.float16 if fp16 else torch.float64, device=a.device)
    nan_rows = torch.zeros((batches, rows_a + rows_b), dtype=torch.int32, device=a.device)  # A's rows, then B's
    tile_m, tile_n = COMBINE_TILE
    with torch.cuda.device(a.device) if a.device.type == "cuda" else contextlib.nullcontext():
        for batch in range(batches):
            digits_a = _digits(a[:, :, batch], sfa[:, :, batch], nan_rows[batch, :rows_a])
            digits_b = _digits(b[:, :, batch], sfb[:, :, batch], nan_rows[batch, rows_a:])
            products = torch._int_mm(digits_a, digits_b.t())  # (3M, 3N): the nine G_ij
            grid = (-(-rows_a // tile_m), -(-rows_b // tile_n))
            _kernels()[1][grid](products, nan_rows[batch], out[batch], rows_a, rows_b, products.stride(0),
                                out.stride(1), BLOCK_M=tile_m, BLOCK_N=tile_n, ROUND_ONCE=fp16,
                                num_warps=4)
    return out.permute(1, 2, 0)
