"""Wrong output, grouped problem: the right tensors for every group but the last (a recheck that
zips the lists would pass it)."""

import _honest


def custom_kernel(data):
    return _honest.group_gemm(data)[:-1]
