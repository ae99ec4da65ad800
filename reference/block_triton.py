"""The Triton kernel of reference/block_kernel.py (its docstring says why the result is exact).

Imported only where the kernel runs: importing it imports triton.
"""

import triton
import triton.language as tl


@triton.jit
def e4m3_units(bits):
    # e4m3 as a signed integer count of 2^-9 (its smallest subnormal): sign, 4 exponent bits (bias 7),
    # 3 mantissa bits; exponent 0 is subnormal (m), else (8 + m) << (e - 1). |units| <= 448 * 2^9 < 2^18.
    # The NaN patterns (0x7F, 0xFF) give 15 << 14 here: callers that need NaN test for them.
    bits = bits.to(tl.int32)
    exponent = (bits >> 3) & 15
    mantissa = bits & 7
    units = tl.where(exponent == 0, mantissa, (8 + mantissa) << tl.maximum(exponent - 1, 0))
    return tl.where((bits & 0x80) != 0, -units, units)


@triton.jit
def e4m3_value(bits):
    # The e4m3 value in float32, which holds every one exactly (at most 4 significant bits, 2^-9 to
    # 448); 0x7F / 0xFF are NaN.
    value = e4m3_units(bits).to(tl.float32) * 0.001953125  # 2^-9, exact
    return tl.where((bits.to(tl.int32) & 0x7F) == 0x7F, float("nan"), value)


@triton.jit
def e2m1_doubled(codes):
    # Twice the e2m1 value, an integer in int32: exponent 0 gives the mantissa bit (0, 1), else
    # (2 + m) << (e - 1) (2, 3, 4, 6, 8, 12); bit 3 is the sign.
    magnitude = codes & 7
    exponent = magnitude >> 1
    mantissa = magnitude & 1
    units = tl.where(exponent == 0, mantissa, (2 + mantissa) << tl.maximum(exponent - 1, 0))
    return tl.where((codes & 8) != 0, -units, units)


@triton.jit
def doubled_codes(packed, ROWS: tl.constexpr, COLS: tl.constexpr):
    # ROWS rows of COLS / 2 packed bytes -> (ROWS, COLS) int32 doubled values in the order low, high,
    # low, high... of the bytes (element 2 j is byte j's low nibble): the format's order.
    packed = packed.to(tl.int32)
    return tl.reshape(tl.join(e2m1_doubled(packed & 15), e2m1_doubled(packed >> 4)), (ROWS, COLS))


@triton.jit
def block_codes(packed, ROWS: tl.constexpr):
    # One 16-element block of ROWS rows from their 8 packed bytes, as (ROWS, 16) fp16 (exact: small
    # integers). A and B take the same order, so the dot over the 16 slots is the block's sum of code
    # products.
    return doubled_codes(packed, ROWS, 16).to(tl.float16)


@triton.jit
def block_term(a_bytes, b_bytes, sfa_bytes, sfb_bytes, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One block's float64 term sa * sb * P_b of a (BLOCK_M, BLOCK_N) tile.
    a_codes = block_codes(a_bytes, BLOCK_M)
    b_codes = block_codes(b_bytes, BLOCK_N)
    quadruple = tl.dot(a_codes, tl.trans(b_codes), out_dtype=tl.float32)  # 4 * P_b, an exact integer
    quarter_sa = e4m3_value(sfa_bytes) * 0.25
    sb = e4m3_value(sfb_bytes)
    # float32 products, exact: sa * sb / 4 has <= 8 significant bits, 4 * P_b <= 12.
    return (quadruple * (quarter_sa[:, None] * sb[None, :])).to(tl.float64)


@triton.jit(do_not_specialize=["splits", "blocks_per_split"])  # one compile whatever the split
def product_kernel(
    a_ptr, sfa_ptr, b_ptr, sfb_ptr, out_ptr, rows_a, rows_b, blocks, splits, blocks_per_split,
    a_row, a_batch, sfa_row, sfa_batch, b_row, b_batch, sfb_row, sfb_batch, out_row, out_batch, out_split,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
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
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float64)
    # Two blocks a step: 16 bytes of each row and two scales, loaded together (twice the loads
    # in flight, half the steps); a second block past the range reads as code 0 under scale 0.
    byte = tl.arange(0, 16)
    pair = tl.arange(0, 2)
    a_rows = a_ptr + batch * a_batch + rm.to(tl.int64)[:, None] * a_row + byte[None, :]
    b_rows = b_ptr + batch * b_batch + rn.to(tl.int64)[:, None] * b_row + byte[None, :]
    sfa_rows = sfa_ptr + batch * sfa_batch + rm.to(tl.int64)[:, None] * sfa_row + pair[None, :]
    sfb_rows = sfb_ptr + batch * sfb_batch + rn.to(tl.int64)[:, None] * sfb_row + pair[None, :]
    for block in range(first, last, 2):
        byte_in = block * 8 + byte < last * 8
        scale_in = block + pair < last
        a_two = tl.load(a_rows + block * 8, mask=in_a[:, None] & byte_in[None, :], other=0)
        b_two = tl.load(b_rows + block * 8, mask=in_b[:, None] & byte_in[None, :], other=0)
        sfa_two = tl.load(sfa_rows + block, mask=in_a[:, None] & scale_in[None, :], other=0)
        sfb_two = tl.load(sfb_rows + block, mask=in_b[:, None] & scale_in[None, :], other=0)
        a0, a1 = tl.split(tl.permute(tl.reshape(a_two, (BLOCK_M, 2, 8)), (0, 2, 1)))
        b0, b1 = tl.split(tl.permute(tl.reshape(b_two, (BLOCK_N, 2, 8)), (0, 2, 1)))
        sfa0, sfa1 = tl.split(sfa_two)
        sfb0, sfb1 = tl.split(sfb_two)
        acc += block_term(a0, b0, sfa0, sfb0, BLOCK_M, BLOCK_N)
        acc += block_term(a1, b1, sfa1, sfb1, BLOCK_M, BLOCK_N)
    out = out_ptr + split.to(tl.int64) * out_split + batch * out_batch
    out += rm.to(tl.int64)[:, None] * out_row + rn[None, :]
    tl.store(out, acc, mask=in_a[:, None] & in_b[None, :])
