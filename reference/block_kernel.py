"""The NVFP4 product by 16-element blocks in one fused Triton kernel: the float64 result, exactly.

C[m, n] = sum over K blocks b of sa[m, b] * sb[n, b] * P_b[m, n], where P_b is the block's sum of
code products. Every e2m1 value doubled is an integer (0, 1, 2, 3, 4, 6, 8, 12 and their negatives),
which fp16 holds exactly, so 4 * P_b is a dot product of 16 integer pairs: each product at most 144,
every partial sum an integer of magnitude at most 16 * 144 = 2304 < 2^12. The tensor cores multiply
fp16 exactly and add in float32; a sum whose every bit lies within 12 bits of its largest term loses
none to any alignment or order of addition, so the dot returns 4 * P_b exactly. Each block's term
(4 * P_b) * (sa * sb / 4) is then exact in float32 too (at most 12 + 8 significant bits, 2^-20 to
2^27 in magnitude), and only the sum over blocks needs float64: one conversion and one float64 add
per output element and block, where an int8 dot's int32 needed a conversion and two float64 ops.

Why this is the float64 result: every e4m3 value is an integer multiple of 2^-9 (its smallest
subnormal) and every e2m1 value a multiple of 2^-1, so every term sa * sb * P_b (and every product
a_k * b_k that the float64 decode sums) is an integer multiple of 2^-20, and every partial sum too.
float64 holds each multiple of 2^-20 below 2^33 in magnitude exactly, and each partial sum is at
most sum_k |a_k b_k| <= 36 * K * max|sa| * max|sb|. While that is below 2^33 (``exact_bound``),
no addition rounds: this kernel and the float64 decode (in any order of summation) both return
the exact sum, bit for bit. Every shipped task is far inside it (scales <= 1: K up to 2.4e8).
Beyond it both are within (number of additions) * 2^-53 * sum_k |a_k b_k| of the exact sum.

The packed bytes and the e4m3 scale bytes are read where they lie (any row and batch strides, so
the GEMV's one-row slice of b and the contest's (rows, K/2, L) views need no copy); no decoded
copy of an operand is written to memory. Triton is imported on first use only (the parent's
CPU path never needs it); ``TRITON_INTERPRET=1`` runs the kernel on the CPU (the tests do).
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch

from reference.formats import BLOCK_SIZE, as_bytes
from reference.triton_cache import prepare_triton

BYTES_PER_BLOCK = BLOCK_SIZE // 2
EXACT_LIMIT = 2.0**33
"""float64 holds every integer multiple of 2^-20 below this magnitude."""
MAX_CODE_PRODUCT = 36.0
"""The largest |e2m1 x e2m1| product (6 * 6)."""
PROGRAMS_PER_SM = 8
"""How many programs the split over K aims at per SM: one program per output tile left the GPU
half idle on the benchmark shapes (a 128 x 4096 group: 128 tiles on 132 SMs, each adding 448 blocks
one after another); with two blocks a step, 8 read up to 11% faster than 4 on the H100 and 0.5% slower
on two dual GEMM shapes (docs/results.md run 21 call 2)."""
MIN_BLOCKS_PER_SPLIT = 16
"""The fewest K blocks one program adds: below it, a program's start costs more than its work."""


def exact_bound(k: int, max_scale_a: float, max_scale_b: float) -> float:
    """The largest partial sum a K-long product can reach (36 * K * max|sa| * max|sb|): below
    ``EXACT_LIMIT``, this kernel and the float64 decode both give the exact sum."""
    return MAX_CODE_PRODUCT * k * max_scale_a * max_scale_b


@functools.cache
def _kernel():
    """The fused kernel (reference/block_triton.py), imported on first use."""
    prepare_triton()
    from reference.block_triton import product_kernel

    return product_kernel


def tiles(rows_b: int) -> tuple[int, int]:
    """(BLOCK_M, BLOCK_N): 16 columns for a vector (the GEMV's one row of b), else 64 x 64."""
    return (128, 16) if rows_b <= 16 else (64, 64)


def splits(programs: int, blocks: int, device: torch.device) -> int:
    """How many K ranges each output tile is split into, their partial sums added in float64
    afterwards (still the exact sum: every partial sum is bounded as the whole one is, module
    docstring): enough programs for ``PROGRAMS_PER_SM`` on a GPU, none off one."""
    if device.type != "cuda":
        return 1
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    wanted = math.ceil(PROGRAMS_PER_SM * sms / max(1, programs))
    return max(1, min(wanted, blocks // MIN_BLOCKS_PER_SPLIT))


def block_product(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor,
                  tile: tuple[int, int] | None = None) -> torch.Tensor:
    """C (M, N, L) float64 = A (M, K, L) @ B (N, K, L)^T per batch, exactly (module docstring).

    ``a``/``b``: packed (rows, K/2, L) e2m1 (fp4x2 or uint8) with unit stride along K;
    ``sfa``/``sfb``: their (rows, K/16, L) e4m3 scales (or raw bytes), unit stride along K/16.
    ``tile`` overrides ``tiles`` (the tests' interpreter runs take larger ones).
    """
    a, b, sfa, sfb = (as_bytes(a), as_bytes(b), sfa.view(torch.uint8), sfb.view(torch.uint8))
    rows_a, half_k, batches = a.shape
    rows_b = b.shape[0]
    blocks = half_k // BYTES_PER_BLOCK
    if any(t.stride(1) != 1 for t in (a, b, sfa, sfb)) or half_k % BYTES_PER_BLOCK or sfa.shape[1] != blocks:
        raise ValueError(f"block_product takes K-contiguous operands with K/16 scales; got A {tuple(a.shape)} "
                         f"strides {a.stride()}, scales {tuple(sfa.shape)}")
    block_m, block_n = tile or tiles(rows_b)
    tiles_m, tiles_n = math.ceil(rows_a / block_m), math.ceil(rows_b / block_n)
    if not blocks:  # K = 0: the empty sum
        return torch.zeros((rows_a, rows_b, batches), dtype=torch.float64, device=a.device)
    per_split = math.ceil(blocks / splits(tiles_m * tiles_n * batches, blocks, a.device))
    parts = math.ceil(blocks / per_split)  # so that no K range is empty
    out = torch.empty((parts, batches, rows_a, rows_b), dtype=torch.float64, device=a.device)
    if out.numel():
        with torch.cuda.device(a.device) if a.device.type == "cuda" else contextlib.nullcontext():
            _kernel()[(tiles_m, tiles_n, batches * parts)](
                a, sfa, b, sfb, out, rows_a, rows_b, blocks, parts, per_split,
                a.stride(0), a.stride(2), sfa.stride(0), sfa.stride(2), b.stride(0), b.stride(2),
                sfb.stride(0), sfb.stride(2), out.stride(2), out.stride(1), out.stride(0),
                BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4,
            )  # fmt: skip
    return (out[0] if parts == 1 else out.sum(0)).permute(1, 2, 0)
