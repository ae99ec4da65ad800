"""Cheat 9: call the problem's reference implementation itself. Not a cheat here: the outputs are
right and every call is timed honestly (the reference is slow), so it passes."""

from problems.nvfp4_gemv.reference import ref_kernel


def custom_kernel(data):
    return ref_kernel(data)
