"""An independent float64 oracle for NVFP4, written from the format definitions alone.

Nothing here imports ``reference`` or ``problems``: every value comes from the bit fields and
formulas of the public contest's format definition (restated below), so the tests compare the
code under test with a second, separately written reading of the same definitions.

- e2m1: 1 sign bit, 2 exponent bits (bias 1), 1 mantissa bit; exponent 0 is subnormal.
  Two codes a byte: element 2i in the low nibble, element 2i+1 in the high nibble.
- e4m3 (float8_e4m3fn): 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is
  subnormal; exponent 15 with mantissa 7 (0x7F, 0xFF) is NaN; no infinities; max 448.
- x[m, k] = e2m1(a[m, k]) * e4m3(sf[m, k // 16]).
- Blocked layout: 128x4 tiles, row-block-major, 512 bytes each, tile-local byte offset
  (r % 32) * 16 + (r // 32) * 4 + c.
- Permuted tensor: perm[r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, l] = sf[r, c, l].

Scalar functions are plain Python. The tensor helpers only use torch for indexing and float64
arithmetic, with lookup tables built from the scalar definitions; ``dot_fsum`` gives correctly
rounded sums for the smallest cross-checks.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Sequence

import torch

BLOCK = 16
TILE_ROWS = 128
TILE_COLS = 4
TILE_BYTES = TILE_ROWS * TILE_COLS


# --- e2m1 -------------------------------------------------------------------------------------


def minifloat_value(bits: int, exponent_bits: int, mantissa_bits: int, bias: int) -> float:
    """Value of a sign / exponent / mantissa bit pattern (no infinities, no NaN handling).

    Exponent 0 is subnormal, 0.m * 2^(1 - bias); otherwise normal, 1.m * 2^(e - bias).
    """
    sign = (bits >> (exponent_bits + mantissa_bits)) & 1
    exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = bits & ((1 << mantissa_bits) - 1)
    fraction = mantissa / (1 << mantissa_bits)
    significand = fraction if exponent == 0 else 1 + fraction
    magnitude = significand * 2.0 ** (max(exponent, 1) - bias)
    return -magnitude if sign else magnitude


def e2m1_value(code: int) -> float:
    """Value of a 4-bit e2m1 code from its bit fields (code 8 is -0.0)."""
    if not 0 <= code < 16:
        raise ValueError(f"e2m1 codes are 4 bits, got {code}")
    return minifloat_value(code, exponent_bits=2, mantissa_bits=1, bias=1)


E2M1_TABLE: tuple[float, ...] = tuple(e2m1_value(code) for code in range(16))
E2M1_MAX = max(E2M1_TABLE)


def e2m1_nearest_code(x: float) -> int:
    """Nearest e2m1 code: ties to the even mantissa bit, saturating at +-6, sign kept at zero."""
    if math.isnan(x):
        raise ValueError("NaN has no e2m1 code")
    sign = 8 if math.copysign(1.0, x) < 0 else 0
    magnitude = abs(x)
    if magnitude >= E2M1_MAX:
        return sign | 7
    # Among the 8 non-negative codes, the smallest distance wins; on a tie, mantissa bit 0.
    best = min(range(8), key=lambda code: (abs(E2M1_TABLE[code] - magnitude), code & 1))
    return sign | best


def e2m1_half_gap(x: float) -> float:
    """Half the distance between the two e2m1 magnitudes bracketing |x| (the rounding bound).

    Beyond 6 there is no upper neighbour: the bound is then |x| - 6 (saturation) or 1, whichever
    is larger.
    """
    magnitude = abs(x)
    grid = sorted(set(abs(v) for v in E2M1_TABLE))
    for low, high in itertools.pairwise(grid):
        if low <= magnitude <= high:
            return (high - low) / 2
    return max(magnitude - grid[-1], (grid[-1] - grid[-2]) / 2)


def unpack_byte(byte: int) -> tuple[int, int]:
    """(element 2i, element 2i+1) of one packed byte."""
    return byte & 0x0F, byte >> 4


def pack_pair(even: int, odd: int) -> int:
    """The byte holding element 2i (``even``) and element 2i+1 (``odd``)."""
    return (even & 0x0F) | ((odd & 0x0F) << 4)


# --- e4m3 -------------------------------------------------------------------------------------


def e4m3_value(byte: int) -> float:
    """Value of an 8-bit float8_e4m3fn pattern from its bit fields (all-ones magnitude is NaN)."""
    if not 0 <= byte < 256:
        raise ValueError(f"e4m3 patterns are 8 bits, got {byte}")
    if byte & 0x7F == 0x7F:
        return math.nan
    return minifloat_value(byte, exponent_bits=4, mantissa_bits=3, bias=7)


E4M3_TABLE: tuple[float, ...] = tuple(e4m3_value(byte) for byte in range(256))
E4M3_MAX = max(v for v in E4M3_TABLE if not math.isnan(v))
E4M3_MIN_NORMAL = 2.0**-6
E4M3_MIN_SUBNORMAL = 2.0**-9
_E4M3_FINITE_POSITIVE = [byte for byte in range(0x80) if not math.isnan(E4M3_TABLE[byte])]


def e4m3_is_subnormal(byte: int) -> bool:
    """Exponent field zero, mantissa non-zero."""
    return (byte >> 3) & 0b1111 == 0 and byte & 0b111 != 0


def e4m3_nearest(x: float) -> int:
    """Nearest e4m3 pattern: ties to the even mantissa bit, saturating at +-448; NaN -> 0x7F."""
    if math.isnan(x):
        return 0x7F
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    magnitude = abs(x)
    if magnitude >= E4M3_MAX:
        return sign | 0x7E
    best = min(_E4M3_FINITE_POSITIVE, key=lambda byte: (abs(E4M3_TABLE[byte] - magnitude), byte & 1))
    return sign | best


# --- layouts ----------------------------------------------------------------------------------


def ceil_to(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def blocked_size(rows: int, cols: int) -> int:
    """Bytes of the blocked layout of a (rows, cols) scale matrix."""
    return ceil_to(rows, TILE_ROWS) * ceil_to(cols, TILE_COLS)


def blocked_offset(r, c, cols: int):
    """Byte offset of scale (r, c) of a (rows, cols) matrix in the blocked layout.

    Works on Python ints and on int64 tensors alike.
    """
    col_tiles = ceil_to(cols, TILE_COLS) // TILE_COLS
    tile = (r // TILE_ROWS) * col_tiles + c // TILE_COLS
    local_row = r % TILE_ROWS
    return tile * TILE_BYTES + (local_row % 32) * 16 + (local_row // 32) * 4 + c % TILE_COLS


def permuted_shape(rows: int, cols: int, batches: int) -> tuple[int, ...]:
    return (32, 4, ceil_to(rows, TILE_ROWS) // TILE_ROWS, 4, ceil_to(cols, TILE_COLS) // TILE_COLS, batches)


def permuted_index(r, c, l):
    """Index of sf[r, c, l] in the (32, 4, rest_mn, 4, rest_k, L) permuted tensor."""
    return (r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, l)


def blocked_from_plain(sf_bytes: torch.Tensor) -> torch.Tensor:
    """The blocked layout (1-D uint8, zero padded) of a (rows, cols) uint8 matrix, by the formula."""
    rows, cols = sf_bytes.shape
    out = torch.zeros(blocked_size(rows, cols), dtype=torch.uint8)
    r = torch.arange(rows).unsqueeze(1).expand(rows, cols)
    c = torch.arange(cols).unsqueeze(0).expand(rows, cols)
    out[blocked_offset(r, c, cols)] = sf_bytes
    return out


def plain_from_blocked(blocked_bytes: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Read a (rows, cols) uint8 matrix back out of its blocked layout, by the formula."""
    flat = blocked_bytes.reshape(-1)
    if flat.numel() != blocked_size(rows, cols):
        raise ValueError(f"a blocked ({rows}, {cols}) matrix has {blocked_size(rows, cols)} bytes, got {flat.numel()}")
    r = torch.arange(rows).unsqueeze(1)
    c = torch.arange(cols).unsqueeze(0)
    return flat[blocked_offset(r, c, cols)]


def plain_from_permuted(perm_bytes: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Read (rows, cols, L) uint8 scales out of a permuted tensor, by the index formula."""
    r = torch.arange(rows).view(rows, 1, 1)
    c = torch.arange(cols).view(1, cols, 1)
    l = torch.arange(perm_bytes.shape[5]).view(1, 1, -1)
    return perm_bytes[permuted_index(r, c, l)]


# --- values and products ----------------------------------------------------------------------


def _table(values: Sequence[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def codes_of(packed_bytes: torch.Tensor) -> torch.Tensor:
    """(rows, K/2, ...) uint8 -> (rows, K, ...) int64 codes, element 2i from the low nibble."""
    data = packed_bytes.to(torch.int64)
    shape = list(data.shape)
    shape[1] *= 2
    codes = torch.empty(shape, dtype=torch.int64)
    codes[:, 0::2] = data & 0x0F
    codes[:, 1::2] = data >> 4
    return codes


def decode_operand(packed_bytes: torch.Tensor, scale_bytes: torch.Tensor) -> torch.Tensor:
    """Exact float64 values (rows, K, L) of (rows, K/2, L) packed data with (rows, K/16, L) scales."""
    codes = codes_of(packed_bytes)
    k = codes.shape[1]
    if scale_bytes.shape[1] * BLOCK != k:
        raise ValueError(f"{k} elements need {k // BLOCK} scales a row, got {scale_bytes.shape[1]}")
    scales = _table(E4M3_TABLE)[scale_bytes.to(torch.int64)]
    return _table(E2M1_TABLE)[codes] * scales[:, torch.arange(k) // BLOCK]


def dot_fsum(x: Sequence[float], y: Sequence[float]) -> float:
    """Correctly rounded sum of x[i] * y[i] (each product is exact for e2m1 x e4m3 values)."""
    return math.fsum(a * b for a, b in zip(x, y))


def mm_fsum(a_values: torch.Tensor, b_values: torch.Tensor) -> torch.Tensor:
    """C[m, n, l] = sum_k A[m, k, l] B[n, k, l] by explicit loops and math.fsum (small shapes only)."""
    rows_a, _, batches = a_values.shape
    rows_b = b_values.shape[0]
    a_list = a_values.permute(2, 0, 1).tolist()
    b_list = b_values.permute(2, 0, 1).tolist()
    out = [
        [[dot_fsum(a_list[l][m], b_list[l][n]) for l in range(batches)] for n in range(rows_b)] for m in range(rows_a)
    ]
    return torch.tensor(out, dtype=torch.float64)


def mm_float64(a_values: torch.Tensor, b_values: torch.Tensor) -> torch.Tensor:
    """The same product, vectorized in float64 (rounding ~K * 2^-53 relative: far below fp16)."""
    return torch.einsum("mkl,nkl->mnl", a_values.to(torch.float64), b_values.to(torch.float64))


def silu(x: torch.Tensor) -> torch.Tensor:
    """x * sigmoid(x) = x / (1 + e^-x), float64."""
    x = x.to(torch.float64)
    return x / (1.0 + torch.exp(-x))


def to_fp16(x: torch.Tensor) -> torch.Tensor:
    """Round float64 to float16 correctly (nearest even, overflow to inf), one element at a time.

    torch's own float64 -> float16 cast rounds through float32 (double rounding), so this uses
    the struct module's direct IEEE half conversion instead.
    """

    def one(value: float) -> float:
        try:
            return struct.unpack("<e", struct.pack("<e", value))[0]
        except OverflowError:
            return math.copysign(math.inf, value)

    flat = [one(v) for v in x.to(torch.float64).reshape(-1).tolist()]
    return torch.tensor(flat, dtype=torch.float16).reshape(x.shape)


# --- the four problems ------------------------------------------------------------------------


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8)


def operand(data: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Decode one contest operand ((rows, K/2, L) fp4x2, (rows, K/16, L) e4m3) to float64."""
    return decode_operand(_bytes(data), _bytes(scales))


def gemv(data: tuple, rounded: bool = True) -> torch.Tensor:
    a, b, sfa, sfb, _, _, _ = data
    vector = operand(b, sfb)[:1]  # row 0 is the vector; rows 1..127 are padding
    out = mm_float64(operand(a, sfa), vector)
    return to_fp16(out) if rounded else out


def gemm(data: tuple, rounded: bool = True) -> torch.Tensor:
    a, b, sfa, sfb, _, _, _ = data
    out = mm_float64(operand(a, sfa), operand(b, sfb))
    return to_fp16(out) if rounded else out


def dual_gemm(data: tuple, rounded: bool = True) -> torch.Tensor:
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, _ = data
    a_values = operand(a, sfa)
    gate = mm_float64(a_values, operand(b1, sfb1))
    up = mm_float64(a_values, operand(b2, sfb2))
    out = silu(gate) * up
    return to_fp16(out) if rounded else out


def group_gemm(data: tuple, rounded: bool = True) -> list[torch.Tensor]:
    """One output per group; ``rounded=False`` keeps the float64 values."""
    abc, scales, _, _ = data
    outs = [mm_float64(operand(a, sfa), operand(b, sfb)) for (a, b, _), (sfa, sfb) in zip(abc, scales)]
    return [to_fp16(out) for out in outs] if rounded else outs


PROBLEM_ORACLES = {
    "nvfp4_gemv": gemv,
    "nvfp4_gemm": gemm,
    "nvfp4_dual_gemm": dual_gemm,
    "nvfp4_group_gemm": group_gemm,
}
