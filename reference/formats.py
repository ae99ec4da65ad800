"""The element and scale formats of the block-scaled problems, defined once for the whole project.

e2m1 ("fp4"): 1 sign bit, 2 exponent bits (bias 1), 1 mantissa bit. Codes 0..7 are
0, 0.5, 1, 1.5, 2, 3, 4, 6; codes 8..15 are their negatives (8 is -0). Two codes share a
byte: element 2i in the low nibble, element 2i+1 in the high nibble.

NVFP4 scales, and the elements of the fp8 problems, are fp8 e4m3 (``torch.float8_e4m3fn``: bias
7, no infinities, max 448, subnormals down to 2^-9); NVFP4 has one scale per ``BLOCK_SIZE``
consecutive elements along K.

MXFP8 scales are e8m0 (``torch.float8_e8m0fnu``): 8 exponent bits, no sign, no mantissa; code e
is 2^(e - 127), 0xFF is NaN, and there is no zero.

Every function works on ``uint8`` views: CPU builds of torch implement few operations on
``float4_e2m1fn_x2``, so packed data is handled as raw bytes and re-viewed at the edges.
"""

from __future__ import annotations

import functools

import torch

BLOCK_SIZE = 16
"""Elements along K that share one e4m3 scale."""

E2M1_MAX = 6.0
E4M3_MAX = 448.0

FP4 = torch.float4_e2m1fn_x2
E4M3 = torch.float8_e4m3fn
E8M0 = torch.float8_e8m0fnu
E8M0_BIAS = 127
E8M0_NAN = 0xFF

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
"""Value of each 4-bit code, indexed by the code."""


def as_bytes(packed: torch.Tensor) -> torch.Tensor:
    """View packed fp4x2 (or uint8) data as uint8 without copying."""
    if packed.dtype == torch.uint8:
        return packed
    if packed.dtype != FP4:
        raise TypeError(f"expected {FP4} or uint8 packed data, got {packed.dtype}")
    return packed.view(torch.uint8)


def as_fp4(packed_bytes: torch.Tensor) -> torch.Tensor:
    """View uint8 bytes as ``float4_e2m1fn_x2`` (one element per byte) without copying."""
    return as_bytes(packed_bytes).view(FP4)


def unpack_nibbles(packed: torch.Tensor) -> torch.Tensor:
    """Split packed bytes (..., K/2) into 4-bit codes (..., K): low nibble first."""
    data = as_bytes(packed)
    low = data & 0x0F
    high = data >> 4
    return torch.stack((low, high), dim=-1).flatten(-2)


def pack_nibbles(codes: torch.Tensor) -> torch.Tensor:
    """Pack 4-bit codes (..., K), K even, into bytes (..., K/2): element 2i in the low nibble."""
    if codes.shape[-1] % 2:
        raise ValueError(f"the last dimension must be even to pack two codes a byte, got {codes.shape[-1]}")
    pairs = codes.to(torch.uint8).unflatten(-1, (-1, 2))
    return pairs[..., 0] | (pairs[..., 1] << 4)


@functools.lru_cache(maxsize=16)
def _e2m1_table(device: torch.device) -> torch.Tensor:
    """The 16 code values on ``device``, copied there once (a host copy per call would wait on the GPU)."""
    return torch.tensor(E2M1_VALUES, dtype=torch.float32, device=device)


def decode_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """Value (float32) of each 4-bit code, by table lookup."""
    return _e2m1_table(codes.device)[codes.long()]


def encode_e2m1(values: torch.Tensor) -> torch.Tensor:
    """Nearest e2m1 code for each value: round half to even, saturating at +-6; NaN is rejected.

    Ties go to the code with an even mantissa bit (0.25 -> 0, 0.75 -> 1.0, 2.5 -> 2, 5 -> 4),
    as the hardware's round-to-nearest-even conversion does. The sign survives rounding to
    zero (-0.1 -> code 8, -0).
    """
    if torch.isnan(values).any():
        raise ValueError("NaN has no e2m1 encoding")
    # float64 holds every float16/bfloat16/float32/float64 input exactly: a narrower cast would
    # round twice (a float64 just above a midpoint would land on it and go to even).
    magnitude = values.abs().to(torch.float64).clamp(max=E2M1_MAX)
    grid = torch.tensor(E2M1_VALUES[:8], dtype=torch.float64, device=values.device)
    # Midpoints between neighbouring grid values; the code is the count of midpoints passed,
    # where landing exactly on a midpoint moves up only if the upper neighbour is even.
    midpoints = (grid[1:] + grid[:-1]) / 2
    above = magnitude.unsqueeze(-1) > midpoints
    on_tie = magnitude.unsqueeze(-1) == midpoints
    upper_is_even = torch.arange(1, 8, device=values.device) % 2 == 0
    code = (above | (on_tie & upper_is_even)).sum(-1).to(torch.uint8)
    sign = torch.signbit(values).to(torch.uint8) << 3
    return code | sign


def _fp8_values(scales: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float32 values of one-byte scales given as ``dtype`` or as its raw uint8 bits."""
    if scales.dtype == torch.uint8:
        scales = scales.view(dtype)
    if scales.dtype != dtype:
        raise TypeError(f"expected {dtype} scales, got {scales.dtype}")
    return scales.to(torch.float32)


def decode_e4m3(scales: torch.Tensor) -> torch.Tensor:
    """Value (float32) of fp8 e4m3 scales given as ``float8_e4m3fn`` or raw uint8 bits."""
    return _fp8_values(scales, E4M3)


def encode_e4m3(values: torch.Tensor) -> torch.Tensor:
    """Round float values to e4m3 (nearest even, saturating at +-448)."""
    return values.to(torch.float32).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3)


def decode_e8m0(scales: torch.Tensor) -> torch.Tensor:
    """Value (float32) of e8m0 scales given as ``float8_e8m0fnu`` or raw uint8 bits: 2^(e - 127).

    Exact for every code: 2^-127 is a float32 subnormal, 2^127 a normal; 0xFF is NaN.
    """
    return _fp8_values(scales, E8M0)


def encode_e8m0(values: torch.Tensor) -> torch.Tensor:
    """The smallest power of two >= |value| as e8m0, clamped to [2^-127, 2^127]; NaN and inf -> 0xFF.

    Rounding up is the MXFP8 recipe that never saturates: with scale = encode(amax / 448), every
    element of the block divided by the scale stays within e4m3's range. Exact: frexp splits
    |value| = m * 2^e with m in [0.5, 1), and the power is 2^(e - 1) when m is 0.5, else 2^e.
    """
    magnitude = values.abs().to(torch.float64)
    mantissa, exponent = torch.frexp(magnitude)
    power = exponent.to(torch.int64) - (mantissa == 0.5).to(torch.int64)
    codes = (power + E8M0_BIAS).clamp(0, E8M0_NAN - 1)
    codes = torch.where(magnitude == 0, torch.zeros_like(codes), codes)
    codes = torch.where(magnitude.isfinite(), codes, torch.full_like(codes, E8M0_NAN))
    return codes.to(torch.uint8).view(E8M0)


def round_once(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Round float64 values to fp16 or bf16 once, correctly (nearest, ties to even).

    torch casts float64 to these through float32, which rounds twice and can land one ulp off.
    Rounding to float32 *to odd* first (truncate, then set the last bit when inexact) keeps
    enough information (float32 has at least two more significand bits than either, and covers
    both exponent ranges) for the second rounding to be exact.
    """
    if dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"round_once rounds to float16 or bfloat16, not {dtype}")
    if values.dtype != torch.float64:
        return values.to(dtype)
    single = values.to(torch.float32)
    overshot = single.double().abs() > values.abs()
    single = torch.where(overshot, torch.nextafter(single, torch.zeros_like(single)), single)
    inexact = single.double() != values
    bits = single.view(torch.int32) | inexact.to(torch.int32)
    return bits.view(torch.float32).to(dtype)


def round_to_fp16(values: torch.Tensor) -> torch.Tensor:
    """float64 -> fp16, rounded once (the NVFP4 problems' output)."""
    return round_once(values, torch.float16)


def round_to_bf16(values: torch.Tensor) -> torch.Tensor:
    """float64 -> bf16, rounded once (the fp8 problems' output)."""
    return round_once(values, torch.bfloat16)
