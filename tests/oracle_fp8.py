"""An independent float64 oracle for the fp8 problems, written from the format definitions alone.

Like ``oracle.py`` (whose e4m3 table and blocked-layout formula it reuses), nothing here imports
``reference`` or ``problems``. The definitions restated:

- e4m3 elements (float8_e4m3fn), as in ``oracle.py``.
- e8m0 (float8_e8m0fnu, OCP MX): 8 exponent bits, no sign, no mantissa; code e is 2^(e - 127),
  0xFF is NaN; there is no zero.
- MXFP8: x[r, k] = e4m3(data[r, k]) * e8m0(sf[r, k // 32]); the blocked scale layout is NVFP4's.
- Blockwise fp8 (DeepSeek-V3): x[r, k] = e4m3(data[r, k]) * s[r // br, k // bc] with fp32 s,
  (br, bc) = (1, 128) for A and (128, 128) for B.
- bf16: 1 sign, 8 exponent (bias 127), 7 mantissa bits; rounding to nearest, ties to even,
  overflow to infinity, subnormals below 2^-126.
"""

from __future__ import annotations

import math

import oracle
import torch

MX_BLOCK = 32
BLOCKWISE = 128


# --- e8m0 -------------------------------------------------------------------------------------


def e8m0_value(byte: int) -> float:
    """2^(byte - 127); 0xFF is NaN."""
    if not 0 <= byte < 256:
        raise ValueError(f"e8m0 patterns are 8 bits, got {byte}")
    return math.nan if byte == 0xFF else math.ldexp(1.0, byte - 127)


E8M0_TABLE: tuple[float, ...] = tuple(e8m0_value(byte) for byte in range(256))


def e8m0_round_up(x: float) -> int:
    """Code of the smallest power of two >= |x|, clamped to [2^-127, 2^127]; NaN and inf -> 0xFF."""
    if math.isnan(x) or math.isinf(x):
        return 0xFF
    magnitude = abs(x)
    return next((code for code in range(255) if E8M0_TABLE[code] >= magnitude), 254)


def e8m0_nearest(x: float) -> int:
    """Code of the power of two nearest x > 0 (linear distance; a tie goes to the larger power)."""
    return min(range(255), key=lambda code: (abs(E8M0_TABLE[code] - x), -code))


# --- bf16 -------------------------------------------------------------------------------------

BF16_MANTISSA_BITS = 7
BF16_MIN_EXPONENT = -126


def bf16_value(x: float) -> float:
    """x rounded to bf16: nearest, ties to even, overflow to inf (Python's round() is half-even)."""
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    _, e = math.frexp(abs(x))  # |x| = m * 2^e, m in [0.5, 1): the leading bit is 2^(e - 1)
    ulp = math.ldexp(1.0, max(e - 1, BF16_MIN_EXPONENT) - BF16_MANTISSA_BITS)
    rounded = round(abs(x) / ulp) * ulp  # the division by a power of two is exact
    if rounded >= 2.0**128:
        return math.copysign(math.inf, x)
    return math.copysign(rounded, x)


def to_bf16(x: torch.Tensor) -> torch.Tensor:
    """Element by element, float64 -> bf16 through ``bf16_value`` (exact in bf16 by construction)."""
    flat = [bf16_value(v) for v in x.to(torch.float64).reshape(-1).tolist()]
    return torch.tensor(flat, dtype=torch.float64).to(torch.bfloat16).reshape(x.shape)


# --- operands ---------------------------------------------------------------------------------


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8).to(torch.int64)


def e4m3_values(data: torch.Tensor) -> torch.Tensor:
    """(rows, K) e4m3 codes -> float64 values by the oracle's table."""
    return torch.tensor(oracle.E4M3_TABLE, dtype=torch.float64)[_bytes(data)]


def mx_operand(data: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """(rows, K) e4m3 and (rows, K/32) e8m0 -> float64 (rows, K)."""
    k = data.shape[1]
    scale_values = torch.tensor(E8M0_TABLE, dtype=torch.float64)[_bytes(scales)]
    return e4m3_values(data) * scale_values[:, torch.arange(k) // MX_BLOCK]


def blockwise_operand(data: torch.Tensor, scales: torch.Tensor, block_rows: int) -> torch.Tensor:
    """(rows, K) e4m3 and fp32 scales per (block_rows, 128) -> float64 (rows, K)."""
    rows, k = data.shape
    r = torch.arange(rows).unsqueeze(1) // block_rows
    c = torch.arange(k).unsqueeze(0) // BLOCKWISE
    return e4m3_values(data) * scales.to(torch.float64)[r, c]


def mm(a_values: torch.Tensor, b_values: torch.Tensor) -> torch.Tensor:
    """C[m, n] = sum_k A[m, k] B[n, k] in float64."""
    return torch.einsum("mk,nk->mn", a_values, b_values)


# --- the two problems -------------------------------------------------------------------------


def mxfp8_gemm(data: tuple, rounded: bool = True) -> torch.Tensor:
    a, b, sfa, sfb, _, _, _ = data
    out = mm(mx_operand(a, sfa), mx_operand(b, sfb))
    return to_bf16(out) if rounded else out


def fp8_blockwise_gemm(data: tuple, rounded: bool = True) -> torch.Tensor:
    a, b, sa, sb, _ = data
    out = mm(blockwise_operand(a, sa, 1), blockwise_operand(b, sb, BLOCKWISE))
    return to_bf16(out) if rounded else out


PROBLEM_ORACLES = {"mxfp8_gemm": mxfp8_gemm, "fp8_blockwise_gemm": fp8_blockwise_gemm}
