"""Wrong output: the right values with the last column dropped."""

import _honest


def custom_kernel(data):
    return _honest.gemm(data)[:, :-1]
