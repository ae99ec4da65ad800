"""Quantize real matrices to NVFP4 and back.

A row of K values is cut into blocks of 16; each block gets the e4m3 scale that maps its
largest magnitude onto e2m1's largest value (6), and each element is rounded to e2m1.
An optional fp32 global scale divides the data first (the two-level NVFP4 recipe), so that
block scales stay inside e4m3's range; dequantize multiplies it back.
"""

from __future__ import annotations

import torch

from reference.formats import (
    BLOCK_SIZE,
    E2M1_MAX,
    decode_e2m1,
    decode_e4m3,
    encode_e2m1,
    encode_e4m3,
    pack_nibbles,
    unpack_nibbles,
)


def _blocks(x: torch.Tensor) -> torch.Tensor:
    if x.shape[-1] % BLOCK_SIZE:
        raise ValueError(f"K ({x.shape[-1]}) must be a multiple of the block size {BLOCK_SIZE}")
    return x.unflatten(-1, (-1, BLOCK_SIZE))


def quantize(x: torch.Tensor, global_scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize (..., K) values to (packed uint8 (..., K/2), e4m3 scales (..., K/16)).

    With ``global_scale`` the stored data represents ``x / global_scale``.
    """
    values = x.to(torch.float32)
    if global_scale is not None:
        values = values / global_scale
    blocks = _blocks(values)
    amax = blocks.abs().amax(dim=-1)
    scales = encode_e4m3(amax / E2M1_MAX)
    scale_values = decode_e4m3(scales).unsqueeze(-1)
    # An all-zero block (or one whose scale underflows to 0) quantizes to zeros.
    safe = torch.where(scale_values == 0, torch.ones_like(scale_values), scale_values)
    codes = encode_e2m1((blocks / safe).flatten(-2))
    return pack_nibbles(codes), scales


def dequantize(packed: torch.Tensor, scales: torch.Tensor, global_scale: float | None = None) -> torch.Tensor:
    """Expand packed e2m1 data (..., K/2) with e4m3 scales (..., K/16) to float32 (..., K)."""
    values = decode_e2m1(unpack_nibbles(packed))
    scale_values = decode_e4m3(scales)
    if values.shape[-1] != scale_values.shape[-1] * BLOCK_SIZE:
        raise ValueError(
            f"{values.shape[-1]} elements along K need {values.shape[-1] // BLOCK_SIZE} scales, "
            f"got {scale_values.shape[-1]}"
        )
    out = (_blocks(values) * scale_values.unsqueeze(-1)).flatten(-2)
    if global_scale is not None:
        out = out * global_scale
    return out
