"""Quantize real matrices to NVFP4 and back.

A row of K values is cut into blocks of 16; each block gets the e4m3 scale that maps its
largest magnitude onto e2m1's largest value (6), and each element is rounded to e2m1.
An optional fp32 global scale divides the data first (the two-level NVFP4 recipe), so that
block scales stay inside e4m3's range; dequantize multiplies it back.
"""

from __future__ import annotations

import functools

import torch

from reference.formats import (
    BLOCK_SIZE,
    E2M1_MAX,
    E4M3,
    as_bytes,
    decode_e2m1,
    decode_e4m3,
    encode_e2m1,
    encode_e4m3,
    pack_nibbles,
    unpack_nibbles,
)

BYTES_PER_BLOCK = BLOCK_SIZE // 2


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


@functools.lru_cache(maxsize=16)
def _scaled_pairs(device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(65536, 2): row ``scale_bits << 8 | byte`` holds the byte's two elements times the scale.

    Built from ``decode_e2m1`` and ``decode_e4m3`` (the format stays defined once); every entry is
    exact (an e2m1 value times an e4m3 scale has at most 6 significant bits). One gather then
    decodes a byte and applies its scale, where the elementwise route wrote and read an int64
    index and two float32 tensors per element (GPU reference, issue 24).
    """
    codes = torch.arange(256, device=device).to(torch.uint8)
    pairs = decode_e2m1(unpack_nibbles(codes.unsqueeze(-1)))  # (256 bytes, 2 elements)
    scales = decode_e4m3(codes)  # (256 scale bit patterns,)
    return (scales[:, None, None] * pairs[None]).reshape(256 * 256, 2).to(dtype)


def _scale_bits(scales: torch.Tensor) -> torch.Tensor:
    """e4m3 scales given as ``float8_e4m3fn`` or raw uint8, as their uint8 bit patterns."""
    if scales.dtype not in (E4M3, torch.uint8):
        raise TypeError(f"expected {E4M3} scales, got {scales.dtype}")
    return scales.view(torch.uint8)


def dequantize(packed: torch.Tensor, scales: torch.Tensor, global_scale: float | None = None,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Expand packed e2m1 data (..., K/2) with e4m3 scales (..., K/16) to exact values (..., K) of
    ``dtype`` (float32 or float64 hold every value exactly)."""
    data, bits = as_bytes(packed), _scale_bits(scales)
    if data.shape[-1] * 2 != bits.shape[-1] * BLOCK_SIZE:
        raise ValueError(
            f"{data.shape[-1] * 2} elements along K need {data.shape[-1] * 2 // BLOCK_SIZE} scales, "
            f"got {bits.shape[-1]}"
        )
    index = (bits.to(torch.int32) << 8).unsqueeze(-1) + data.unflatten(-1, (-1, BYTES_PER_BLOCK)).to(torch.int32)
    out = torch.nn.functional.embedding(index, _scaled_pairs(data.device, dtype)).flatten(-3)
    if global_scale is not None:
        out = out * global_scale
    return out
