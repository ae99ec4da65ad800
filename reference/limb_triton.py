"""The Triton kernels of reference/limb_product.py (its docstring says why the result is exact).

Imported only where they run: importing this imports triton.
"""

import triton
import triton.language as tl

from reference.block_triton import doubled_codes, e4m3_units


@triton.jit
def split_kernel(
    packed_ptr, scales_ptr, out_ptr, nan_ptr, rows, k, packed_row, scale_row, plane,
    BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    # One (BLOCK_R, BLOCK_K) tile of x = (2 a) * (s * 2^9), an exact int32 (|x| < 2^22), written as three
    # int8 digits x = d0 + 2^8 d1 + 2^16 d2 (d0, d1 in [-128, 127]) to planes 0, 1, 2 of out; a row whose
    # scales here hold a NaN (0x7F, 0xFF) sets its flag in nan_ptr (zeroed by the caller) to 1.
    rows_here = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    in_rows = rows_here < rows
    half = tl.program_id(1) * (BLOCK_K // 2) + tl.arange(0, BLOCK_K // 2)
    bytes_ = tl.load(packed_ptr + rows_here.to(tl.int64)[:, None] * packed_row + half[None, :],
                     mask=in_rows[:, None] & (half < k // 2)[None, :], other=0)
    codes = doubled_codes(bytes_, BLOCK_R, BLOCK_K)
    block = tl.program_id(1) * (BLOCK_K // 16) + tl.arange(0, BLOCK_K // 16)
    scale_bits = tl.load(scales_ptr + rows_here.to(tl.int64)[:, None] * scale_row + block[None, :],
                         mask=in_rows[:, None] & (block < k // 16)[None, :], other=0)
    tl.atomic_max(nan_ptr + rows_here, tl.max(((scale_bits.to(tl.int32) & 0x7F) == 0x7F).to(tl.int32), axis=1),
                  mask=in_rows)
    units = e4m3_units(scale_bits)
    x = tl.reshape(codes, (BLOCK_R, BLOCK_K // 16, 16)) * units[:, :, None]
    x = tl.reshape(x, (BLOCK_R, BLOCK_K))
    low = ((x + 128) & 255) - 128
    rest = (x - low) >> 8
    middle = ((rest + 128) & 255) - 128
    high = (rest - middle) >> 8
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    where = out_ptr + rows_here.to(tl.int64)[:, None] * k + cols[None, :]
    keep = in_rows[:, None] & (cols < k)[None, :]
    tl.store(where, low.to(tl.int8), mask=keep)
    tl.store(where + plane, middle.to(tl.int8), mask=keep)
    tl.store(where + 2 * plane, high.to(tl.int8), mask=keep)


@triton.jit
def odd_single(value):
    # float64 -> float32 rounded to odd: truncated toward zero, its last bit set where that was inexact
    # (reference/formats.py: round_once, step for step, whose second rounding then is exact). A float32
    # above the value's magnitude steps one code toward zero (its bits less one: sign and magnitude).
    single = value.to(tl.float32)
    bits = single.to(tl.int32, bitcast=True)
    bits = tl.where(tl.abs(single.to(tl.float64)) > tl.abs(value), bits - 1, bits)
    inexact = bits.to(tl.float32, bitcast=True).to(tl.float64) != value
    return (bits | inexact.to(tl.int32)).to(tl.float32, bitcast=True)


@triton.jit
def combine_kernel(
    products_ptr, nan_ptr, out_ptr, rows_a, rows_b, products_row, out_row,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ROUND_ONCE: tl.constexpr,
):  # fmt: skip
    # C = 2^-20 * sum over digit pairs (i, j) of 2^(8 (i + j)) G_ij, in int64 (exact), where G_ij is the
    # (rows_a, rows_b) block (i, j) of the stacked int32 product; NaN in a row or column whose scales hold one
    # (nan_ptr: A's rows' flags, then B's). ROUND_ONCE: stored rounded once to out's fp16.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    keep = (rm < rows_a)[:, None] & (rn < rows_b)[None, :]
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int64)
    for i in tl.static_range(3):
        for j in tl.static_range(3):
            at = (i * rows_a + rm).to(tl.int64)[:, None] * products_row + (j * rows_b + rn)[None, :]
            total += tl.load(products_ptr + at, mask=keep, other=0).to(tl.int64) << (8 * (i + j))
    value = total.to(tl.float64) * 9.5367431640625e-07  # 2^-20, exact
    nan_a = tl.load(nan_ptr + rm, mask=rm < rows_a, other=0) != 0
    nan_b = tl.load(nan_ptr + rows_a + rn, mask=rn < rows_b, other=0) != 0
    value = tl.where(nan_a[:, None] | nan_b[None, :], float("nan"), value)
    where = out_ptr + rm.to(tl.int64)[:, None] * out_row + rn[None, :]
    if ROUND_ONCE:
        tl.store(where, odd_single(value).to(out_ptr.dtype.element_ty), mask=keep)
    else:
        tl.store(where, value, mask=keep)
