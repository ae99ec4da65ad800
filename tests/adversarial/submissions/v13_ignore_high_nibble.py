"""Cheat 13, degenerate inputs: a decode that reads only the low nibble of each byte (right only
when the high nibble of every byte is 0). Both nibbles carry random codes in the generated inputs."""

import _honest


def custom_kernel(data):
    return _honest.gemm(data, high_nibble=False)
