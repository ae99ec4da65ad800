"""The output check's rule as one Triton kernel: each element read once, in its own dtype, widened to
float64 in registers, judged, and counted (problems/shared/blockscaled.py: _mismatches, on a GPU).

The rule is blockscaled.Tolerance's, in the same float64 operations torch's path performs one kernel at
a time: |got - expected| <= atol + rtol * |expected| with the product and the sum rounded separately
(``enable_fp_fusion=False``: no fused multiply-add, which would round once), NaN only against NaN, an
infinity only against the same one. atol and rtol come in a float64 tensor: a Python float passed to a
Triton kernel would arrive as float32. Imported only where it runs: importing it imports triton.
"""

import triton
import triton.language as tl


@triton.jit
def widened(pointer, offsets, inside, BF16_BITS: tl.constexpr):
    # The elements as float64, exactly. bfloat16 comes as its 16 bits (an int16 view), made the float32
    # of the same value by hand: a bf16 conversion may flush subnormals (Triton's interpreter does).
    if BF16_BITS:
        bits = tl.load(pointer + offsets, mask=inside, other=0).to(tl.int32) << 16
        return bits.to(tl.float32, bitcast=True).to(tl.float64)
    return tl.load(pointer + offsets, mask=inside, other=0.0).to(tl.float64)


@triton.jit
def mismatch_kernel(got_ptr, expected_ptr, tolerance_ptr, counts_ptr, n, BLOCK: tl.constexpr,
                    BF16_BITS: tl.constexpr):
    # counts[program] = how many of this program's BLOCK elements break the rule.
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    got = widened(got_ptr, offsets, inside, BF16_BITS)
    expected = widened(expected_ptr, offsets, inside, BF16_BITS)
    atol = tl.load(tolerance_ptr)
    rtol = tl.load(tolerance_ptr + 1)
    error = tl.abs(got - expected)
    allowed = atol + rtol * tl.abs(expected)
    infinite = float("inf")
    finite = (tl.abs(got) < infinite) & (tl.abs(expected) < infinite)  # false for NaN too
    ok = finite & (error <= allowed)
    ok = ok | ((tl.abs(expected) == infinite) & (got == expected))
    ok = ok | ((got != got) & (expected != expected))
    tl.store(counts_ptr + tl.program_id(0), tl.sum((inside & ~ok).to(tl.int32), axis=0))
