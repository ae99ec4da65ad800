"""The Triton kernel of reference/block_kernel.py (its docstring says why the result is exact).

Imported only where the kernel runs: importing it imports triton.
"""

import triton
import triton.language as tl


@triton.jit
def e4m3_value(bits):
    # e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal (m * 2^-9),
    # else (8 + m) * 2^(e - 10) = ((8 + m) << (e - 1)) * 2^-9; 0x7F / 0xFF are NaN.
    bits = bits.to(tl.int32)
    exponent = (bits >> 3) & 15
    mantissa = bits & 7
    shift = tl.maximum(exponent - 1, 0)
    units = tl.where(exponent == 0, mantissa, (8 + mantissa) << shift)
    value = units.to(tl.float64) * 0.001953125  # 2^-9, exact
    value = tl.where((bits & 0x80) != 0, -value, value)
    return tl.where((bits & 0x7F) == 0x7F, float("nan"), value)


@triton.jit
def e2m1_doubled(codes):
    # Twice the e2m1 value, an integer: exponent 0 gives the mantissa bit (0, 1), else
    # (2 + m) << (e - 1) (2, 3, 4, 6, 8, 12); bit 3 is the sign.
    magnitude = codes & 7
    exponent = magnitude >> 1
    mantissa = magnitude & 1
    units = tl.where(exponent == 0, mantissa, (2 + mantissa) << tl.maximum(exponent - 1, 0))
    return tl.where((codes & 8) != 0, -units, units).to(tl.int8)


@triton.jit
def product_kernel(
    a_ptr, sfa_ptr, b_ptr, sfb_ptr, out_ptr, rows_a, rows_b, blocks, splits, blocks_per_split,
    a_row, a_batch, sfa_row, sfa_batch, b_row, b_batch, sfb_row, sfb_batch, out_row, out_batch, out_split,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SLOTS: tl.constexpr,
):  # fmt: skip
    # Axis 2 runs over batches and, within each, the K ranges the product is split into: this
    # program adds the blocks of its range, and writes its partial sum to its own slice of out.
    batch = (tl.program_id(2) // splits).to(tl.int64)
    split = tl.program_id(2) % splits
    first = split * blocks_per_split
    last = tl.minimum(first + blocks_per_split, blocks)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    in_a, in_b = rm < rows_a, rn < rows_b
    slot = tl.arange(0, SLOTS)  # element slot of the dot: code `slot` of the block, then zeros
    used = slot < 16
    byte = tl.where(used, slot // 2, 0)
    nibble = (slot % 2) * 4
    a_rows = a_ptr + batch * a_batch + rm.to(tl.int64)[:, None] * a_row + byte[None, :]
    b_rows = b_ptr + batch * b_batch + rn.to(tl.int64)[None, :] * b_row + byte[:, None]
    sfa_rows = sfa_ptr + batch * sfa_batch + rm.to(tl.int64) * sfa_row
    sfb_rows = sfb_ptr + batch * sfb_batch + rn.to(tl.int64) * sfb_row
    a_mask, b_mask = in_a[:, None] & used[None, :], in_b[None, :] & used[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float64)
    for block in range(first, last):
        a_bytes = tl.load(a_rows + block * 8, mask=a_mask, other=0).to(tl.int32)
        b_bytes = tl.load(b_rows + block * 8, mask=b_mask, other=0).to(tl.int32)
        a_codes = e2m1_doubled((a_bytes >> nibble[None, :]) & 15)
        b_codes = e2m1_doubled((b_bytes >> nibble[:, None]) & 15)
        quadruple = tl.dot(a_codes, b_codes)  # 4 * P_b, int32, exact
        quarter_sa = e4m3_value(tl.load(sfa_rows + block, mask=in_a, other=0)) * 0.25
        sb = e4m3_value(tl.load(sfb_rows + block, mask=in_b, other=0))
        # Exact products: sa * sb / 4 has <= 8 significant bits, 4 * P_b <= 12.
        acc += quadruple.to(tl.float64) * (quarter_sa[:, None] * sb[None, :])
    out = out_ptr + split.to(tl.int64) * out_split + batch * out_batch
    out += rm.to(tl.int64)[:, None] * out_row + rn[None, :]
    tl.store(out, acc, mask=in_a[:, None] & in_b[None, :])
