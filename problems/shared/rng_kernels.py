"""The CUDA kernels of problems/shared/counter_rng.py (its docstring defines what they compute).

Imported only where they run: importing this module imports triton. Each kernel serves several
tensors in one launch, found through a table of their addresses and counts (program (p, s) takes
words p * BLOCK.. of tensor s; the grid spans the longest, the others' extra programs return).
"""

import triton
import triton.language as tl


@triton.jit
def hash_kernel(table_ptr, BLOCK: tl.constexpr):
    # Program (p, s): words p * BLOCK.. of stream s, whose table row (int64) holds its output's
    # address, its word count and its two keys. Counters are int64 offsets (a stream has up to
    # 2^32 words); each is below 2^32, so the truncation to uint32 is exact, as for the keys.
    row = table_ptr + tl.program_id(1).to(tl.int64) * 4
    out_ptr = tl.load(row).to(tl.pointer_type(tl.int32))
    count = tl.load(row + 1)
    start = tl.program_id(0).to(tl.int64) * BLOCK
    if start >= count:  # the grid spans the longest stream: the shorter ones' extra programs stop
        return
    index = start + tl.arange(0, BLOCK)
    x = index.to(tl.uint32) ^ tl.load(row + 2).to(tl.uint32)
    for step in tl.static_range(2):
        if step == 1:
            x = x ^ tl.load(row + 3).to(tl.uint32)
        x = x ^ (x >> 16)
        x = x * tl.full([BLOCK], 0x7FEB352D, tl.uint32)
        x = x ^ (x >> 15)
        x = x * tl.full([BLOCK], 0x846CA68B, tl.uint32)
        x = x ^ (x >> 16)
    tl.store(out_ptr + index, x.to(tl.int32, bitcast=True), mask=index < count)


@triton.jit
def codes_kernel(
    table_ptr, below_ptr, inside_ptr,
    BLOCK: tl.constexpr, DEPTH: tl.constexpr, BUCKETS: tl.constexpr, LOW_BITS: tl.constexpr,
):  # fmt: skip
    # ScaleTable.codes in one pass: the bucket's count plus one compare per row inside it.
    # Program (p, s): words p * BLOCK.. of tensor s (table row: words' address, codes' address, count).
    row = table_ptr + tl.program_id(1).to(tl.int64) * 3
    count = tl.load(row + 2)
    start = tl.program_id(0).to(tl.int64) * BLOCK
    if start >= count:
        return
    index = start + tl.arange(0, BLOCK)
    mask = index < count
    words_ptr = tl.load(row).to(tl.pointer_type(tl.int32))
    r = tl.load(words_ptr + index, mask=mask, other=0).to(tl.uint32, bitcast=True)
    bucket = (r >> LOW_BITS).to(tl.int32)
    low = (r & ((1 << LOW_BITS) - 1)).to(tl.int32)
    code = tl.load(below_ptr + bucket).to(tl.int32)
    for depth in tl.static_range(DEPTH):
        code += (low >= tl.load(inside_ptr + depth * BUCKETS + bucket)).to(tl.int32)
    tl.store(tl.load(row + 1).to(tl.pointer_type(tl.uint8)) + index, code.to(tl.uint8), mask=mask)
