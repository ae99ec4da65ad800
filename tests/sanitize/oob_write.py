#!POPCORN leaderboard nvfp4_gemv
#!POPCORN author planted-defects
"""Planted defect: the right output, then one 2-byte write 12 bytes past the end of c (memcheck)."""

from _planted import compile_kernel, correct_output

SOURCE = r"""
extern "C" __global__ void write_past_end(unsigned short* c, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) c[n + 6] = 0;
}
"""
_kernel = None


def custom_kernel(data):
    global _kernel
    c = correct_output(data)
    _kernel = _kernel or compile_kernel(SOURCE, "write_past_end")
    _kernel(grid=(1, 1, 1), block=(32, 1, 1), args=[c, c.numel()])
    return c
