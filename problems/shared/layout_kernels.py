"""The CUDA kernel of problems/shared/permuted_scales.py: scales into the permuted layout (reference/layouts.py).

Imported only where it runs: importing this module imports triton. One launch serves every operand of a
draw through a table of their addresses and sizes (program (p, s) writes bytes p * BLOCK.. of operand s's
permuted storage; the grid spans the largest, the others' extra programs return), as the generator's
kernels do (problems/shared/rng_kernels.py).
"""

import triton
import triton.language as tl


@triton.jit
def permute_kernel(table_ptr, BLOCK: tl.constexpr):
    # Table row (int64): the scales' address ((L, rows, cols) storage), the permuted storage's address
    # ((L, rest_mn, rest_k, 32, 4, 4) bytes), rows, cols, rest_mn, rest_k, and the permuted bytes in all.
    # Each program walks its bytes of the permuted storage in order and gathers each one's scale, or 0 in
    # the padding (rows past `rows`, columns past `cols`). Offsets fit int32 (permuted_scales checks).
    row = table_ptr + tl.program_id(1).to(tl.int64) * 7
    total = tl.load(row + 6).to(tl.int32)
    start = tl.program_id(0) * BLOCK
    if start < total:
        rows = tl.load(row + 2).to(tl.int32)
        cols = tl.load(row + 3).to(tl.int32)
        rest_mn = tl.load(row + 4).to(tl.int32)
        rest_k = tl.load(row + 5).to(tl.int32)
        at = start + tl.arange(0, BLOCK)
        c4 = at % 4
        r128 = (at // 4) % 4
        r32 = (at // 16) % 32
        tile = at // 512
        k_block = tile % rest_k
        mn_block = (tile // rest_k) % rest_mn
        batch = tile // (rest_k * rest_mn)
        r = mn_block * 128 + r128 * 32 + r32
        c = k_block * 4 + c4
        inside = (r < rows) & (c < cols) & (at < total)
        source = tl.load(row).to(tl.pointer_type(tl.uint8))
        value = tl.load(source + (batch * rows + r) * cols + c, mask=inside, other=0)
        tl.store(tl.load(row + 1).to(tl.pointer_type(tl.uint8)) + at, value, mask=at < total)
