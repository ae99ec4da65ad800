"""fp8 e4m3 operands with block scales: quantize real matrices to them and decode them exactly.

Two scalings, each a block shape (rows, K elements) that shares one scale:

- MXFP8 (OCP Microscaling): one e8m0 scale (a power of two) per 1 x 32 block along K.
- DeepSeek-V3 / DeepGEMM blockwise: one fp32 scale per 1 x 128 block (activations) or per
  128 x 128 block (weights).

An element's value is e4m3(code) * scale. Decoding works in float64, where every such product
is exact (e4m3 has 4 significant bits, an fp32 scale 24, e8m0 is a power of two), so the
reference products built on it (``reference/ops.py``) carry no rounding of their own.
"""

from __future__ import annotations

import torch

from reference.formats import E4M3_MAX, decode_e4m3, decode_e8m0, encode_e4m3, encode_e8m0
from reference.layouts import ceil_div

MX_BLOCK = (1, 32)
"""MXFP8: one e8m0 scale per 32 consecutive K elements of a row."""

ACTIVATION_BLOCK = (1, 128)
WEIGHT_BLOCK = (128, 128)
"""DeepSeek-V3 blockwise fp8: fp32 scales per 1 x 128 (activations) and 128 x 128 (weights)."""

Block = tuple[int, int]


def block_grid(rows: int, cols: int, block: Block) -> tuple[int, int]:
    """Shape of the scale matrix of a (rows, cols) matrix cut into ``block`` tiles (ragged edges count)."""
    return ceil_div(rows, block[0]), ceil_div(cols, block[1])


def expand_blocks(scales: torch.Tensor, rows: int, cols: int, block: Block) -> torch.Tensor:
    """Per-block values (..., R, C) -> (..., rows, cols): each block's value over its elements."""
    if tuple(scales.shape[-2:]) != block_grid(rows, cols, block):
        raise ValueError(
            f"a ({rows}, {cols}) matrix in {block[0]}x{block[1]} blocks has {block_grid(rows, cols, block)} "
            f"scales, got {tuple(scales.shape[-2:])}"
        )
    full = scales.repeat_interleave(block[0], dim=-2).repeat_interleave(block[1], dim=-1)
    return full[..., :rows, :cols]


def _element_values(data: torch.Tensor) -> torch.Tensor:
    """e4m3 codes (``float8_e4m3fn`` or uint8 bits) as float64."""
    return decode_e4m3(data).double()


def dequantize_mxfp8(data: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Exact float64 values (..., rows, K) of e4m3 ``data`` with (..., rows, K/32) e8m0 ``scales``."""
    rows, cols = data.shape[-2:]
    return _element_values(data) * expand_blocks(decode_e8m0(scales).double(), rows, cols, MX_BLOCK)


def dequantize_blockwise(data: torch.Tensor, scales: torch.Tensor, block: Block) -> torch.Tensor:
    """Exact float64 values (..., rows, K) of e4m3 ``data`` with fp32 ``scales`` per ``block``.

    ``scales`` is (..., ceil(rows / block[0]), ceil(K / block[1])) in any memory order (the A
    scales of the blockwise GEMM are handed over M-major).
    """
    if scales.dtype != torch.float32:
        raise TypeError(f"blockwise fp8 scales are float32, got {scales.dtype}")
    rows, cols = data.shape[-2:]
    return _element_values(data) * expand_blocks(scales.double(), rows, cols, block)


def _block_amax(x: torch.Tensor, block: Block) -> torch.Tensor:
    """max |x| over each block of a (..., rows, cols) matrix, zero-padded at ragged edges."""
    rows, cols = x.shape[-2:]
    grid = block_grid(rows, cols, block)
    padded = torch.zeros((*x.shape[:-2], grid[0] * block[0], grid[1] * block[1]), dtype=x.dtype, device=x.device)
    padded[..., :rows, :cols] = x.abs()
    tiles = padded.unflatten(-1, (grid[1], block[1])).unflatten(-3, (grid[0], block[0]))
    return tiles.amax(dim=(-3, -1))


def _to_e4m3(x: torch.Tensor, scale_values: torch.Tensor, block: Block) -> torch.Tensor:
    rows, cols = x.shape[-2:]
    safe = torch.where(scale_values == 0, torch.ones_like(scale_values), scale_values)
    return encode_e4m3(x / expand_blocks(safe, rows, cols, block))


def quantize_mxfp8(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., rows, K) real values -> (e4m3 data, (..., rows, K/32) e8m0 scales).

    The scale is the smallest power of two >= amax / 448 (``encode_e8m0``), so no element
    saturates; an all-zero block gets 2^-127 and zero data.
    """
    values = x.to(torch.float64)
    if values.shape[-1] % MX_BLOCK[1]:
        raise ValueError(f"K ({values.shape[-1]}) must be a multiple of the MX block size {MX_BLOCK[1]}")
    scales = encode_e8m0(_block_amax(values, MX_BLOCK) / E4M3_MAX)
    return _to_e4m3(values, decode_e8m0(scales).double(), MX_BLOCK), scales


def quantize_blockwise(x: torch.Tensor, block: Block) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., rows, K) real values -> (e4m3 data, fp32 scales per ``block``), DeepSeek style.

    The scale is amax / 448 rounded to fp32 (an all-zero block gets scale 1); elements are
    rounded to the nearest e4m3, saturating at 448 where the fp32 rounding of the scale shrank it.
    """
    values = x.to(torch.float64)
    amax = _block_amax(values, block)
    scales = torch.where(amax == 0, torch.full_like(amax, E4M3_MAX), amax).div(E4M3_MAX).to(torch.float32)
    return _to_e4m3(values, scales.double(), block), scales
