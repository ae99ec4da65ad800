"""Reference block-scaled products for the problems, on any device.

NVFP4 (below), and the fp8 problems at the end: ``mxfp8_mm`` and ``blockwise_fp8_mm`` decode
both operands exactly (``reference/fp8.py``) and multiply in float64 on the operands' device.

Three backends compute ``C[m, n, l] = sum_k A[m, k, l] * B[n, k, l]`` from packed e2m1 data and
e4m3 scales laid out as the contest hands them ((rows, K/2, L) views of (L, rows, K/2) storage):

- ``decode``: expand both operands to exact values (every e2m1 x e4m3 product is exact) and
  accumulate in float64: the yardstick. Runs on any device; the CPU's choice.
- ``blocks``: the same float64 result, bit for bit on every shipped task, from one fused Triton
  kernel that reads the packed bytes and scales where they lie, multiplies 16-element blocks
  exactly in fp16 tensor cores and adds the scaled blocks in float64 (``reference/block_kernel.py``
  proves the equality and its bound). No decoded copy of an operand: CUDA's choice for a vector
  and for shapes the ``limbs`` route does not take.
- ``limbs``: the same float64 result again, from one int8 GEMM (torch._int_mm) of each operand's
  scaled elements written as three int8 digits, the nine digit products added in int64
  (``reference/limb_product.py`` proves it): the choice on CUDA wherever the shape fits it.
- ``scaled_mm``: ``torch._scaled_mm`` on fp4 operands with blocked scales, fp32 accumulation
  in FP4 tensor cores (Blackwell only; not the float64 result, so only when named); operands are
  zero-padded to the shapes it takes (K/2 and N multiples of 16), so the GEMV's single row and
  ragged test shapes run too. Not run on hardware by this project yet: tests check its argument
  preparation against an emulated ``_scaled_mm``.
"""

from __future__ import annotations

import importlib.util
from typing import Literal

import torch

from reference.block_kernel import block_product
from reference.formats import BLOCK_SIZE, E4M3, as_fp4, round_once
from reference.fp8 import ACTIVATION_BLOCK, WEIGHT_BLOCK, dequantize_blockwise, dequantize_mxfp8
from reference.layouts import ceil_div, to_blocked
from reference.limb_product import fits as limbs_fit
from reference.limb_product import limb_product
from reference.quantize import dequantize

Backend = Literal["decode", "blocks", "limbs", "scaled_mm"]


def pick_backend(device: torch.device | str, shape: tuple[int, int, int] | None = None) -> Backend:
    """The fastest backend that gives the float64 result on ``device`` for a product of ``shape``
    (M, N, K; None: any shape).

    All three exact backends give the same bits (reference/block_kernel.py, reference/limb_product.py).
    On CUDA the int8 digits where the shape fits them, else the fused block kernel: measured on the
    H100 in docs/results.md (run 21 call 3: the block kernel 1.4-10x faster than the float64 decode on
    every NVFP4 benchmark shape but two of the dual GEMM's, a tie; run 27 call 3: the digits 1.4-2.8x
    faster than the block kernel, replayed from a graph as the parent runs them, on every GEMM, dual
    and grouped GEMM benchmark shape). The CPU decodes."""
    if torch.device(device).type != "cuda" or importlib.util.find_spec("triton") is None:
        return "decode"
    return "limbs" if shape is not None and limbs_fit(*shape) else "blocks"


def _batch_first(t: torch.Tensor) -> torch.Tensor:
    """(rows, cols, L) -> (L, rows, cols)."""
    return t.permute(2, 0, 1)


def _decode_product(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor) -> torch.Tensor:
    a_values = dequantize(_batch_first(a), _batch_first(sfa)).double()
    b_values = dequantize(_batch_first(b), _batch_first(sfb)).double()
    return torch.matmul(a_values, b_values.transpose(1, 2)).permute(1, 2, 0)


SCALED_MM_MULTIPLE = 16
"""torch._scaled_mm takes K/2 (bytes a row) and N only in multiples of 16."""


def _zero_padded(t: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """(r, c, L) bytes -> (rows, cols, L) bytes, zero padded, each batch slice row-major."""
    raw = t.view(torch.uint8)
    out = torch.zeros((raw.shape[2], rows, cols), dtype=torch.uint8, device=raw.device).permute(1, 2, 0)
    out[: raw.shape[0], : raw.shape[1]] = raw
    return out


def _scaled_mm_product(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor) -> torch.Tensor:
    # Pad K to a multiple of 32 and N to a multiple of 16 (the GEMV's single row, ragged test
    # shapes): padded elements are code 0 under scale 0 and add nothing; the result is cut back.
    batches, rows_a, rows_b = a.shape[2], a.shape[0], b.shape[0]
    half_k = ceil_div(a.shape[1], SCALED_MM_MULTIPLE) * SCALED_MM_MULTIPLE
    sf_cols = half_k * 2 // BLOCK_SIZE
    padded_b = ceil_div(rows_b, SCALED_MM_MULTIPLE) * SCALED_MM_MULTIPLE
    a, sfa = _zero_padded(a, rows_a, half_k), _zero_padded(sfa, rows_a, sf_cols).view(E4M3)
    b, sfb = _zero_padded(b, padded_b, half_k), _zero_padded(sfb, padded_b, sf_cols).view(E4M3)
    out = torch.empty((batches, rows_a, padded_b), dtype=torch.float32, device=a.device)
    for batch in range(batches):
        out[batch] = torch._scaled_mm(
            as_fp4(a[:, :, batch]),
            as_fp4(b[:, :, batch]).transpose(0, 1),
            to_blocked(sfa[:, :, batch]),
            to_blocked(sfb[:, :, batch]),
            out_dtype=torch.float32,
        )
    return out[:, :, :rows_b].permute(1, 2, 0)


def block_scaled_mm(
    a: torch.Tensor,
    sfa: torch.Tensor,
    b: torch.Tensor,
    sfb: torch.Tensor,
    backend: Backend | None = None,
    rounded: torch.dtype | None = None,
) -> torch.Tensor:
    """C (M, N, L) = A (M, K, L) @ B (N, K, L)^T per batch, at float32 precision or better.

    ``a``/``b`` are packed (rows, K/2, L) e2m1 data (fp4x2 or uint8); ``sfa``/``sfb`` are their
    (rows, K/16, L) e4m3 scales. Returns float64 (decode, blocks, limbs) or float32 (scaled_mm);
    ``rounded`` (fp16 or bf16): that result rounded once (``round_once``), which the digits' route does
    to fp16 in its last kernel (the same bits: tests/test_block_kernel.py).
    """
    if a.shape[1] != b.shape[1] or a.shape[2] != b.shape[2]:
        raise ValueError(f"A {tuple(a.shape)} and B {tuple(b.shape)} disagree on K/2 or L")
    chosen = backend or pick_backend(a.device, (a.shape[0], b.shape[0], 2 * a.shape[1]))
    if chosen == "limbs" and rounded in (None, torch.float16):
        return limb_product(a, sfa, b, sfb, fp16=rounded is not None)
    products = {"decode": _decode_product, "blocks": block_product, "limbs": limb_product,
                "scaled_mm": _scaled_mm_product}
    product = products[chosen](a, sfa, b, sfb)
    return product if rounded is None else round_once(product, rounded)


def silu_mul(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up, in the precision of the inputs (the dual GEMM's epilogue)."""
    return torch.nn.functional.silu(gate) * up


def _product_nt(a_values: torch.Tensor, b_values: torch.Tensor) -> torch.Tensor:
    """A (M, K) @ B (N, K)^T of exact float64 values (rounding ~K * 2^-53 relative)."""
    if a_values.shape[-1] != b_values.shape[-1]:
        raise ValueError(f"A {tuple(a_values.shape)} and B {tuple(b_values.shape)} disagree on K")
    return torch.matmul(a_values, b_values.transpose(-2, -1))


def mxfp8_mm(a: torch.Tensor, sfa: torch.Tensor, b: torch.Tensor, sfb: torch.Tensor) -> torch.Tensor:
    """C (M, N) = A @ B^T, float64, from e4m3 A (M, K), B (N, K) and their (rows, K/32) e8m0 scales."""
    return _product_nt(dequantize_mxfp8(a, sfa), dequantize_mxfp8(b, sfb))


def blockwise_fp8_mm(a: torch.Tensor, sa: torch.Tensor, b: torch.Tensor, sb: torch.Tensor) -> torch.Tensor:
    """C (M, N) = (A * sa) @ (B * sb)^T, float64: sa fp32 per 1x128 of A, sb fp32 per 128x128 of B."""
    return _product_nt(dequantize_blockwise(a, sa, ACTIVATION_BLOCK), dequantize_blockwise(b, sb, WEIGHT_BLOCK))
