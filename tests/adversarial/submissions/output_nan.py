"""Wrong output: right everywhere but one NaN (a check with NaN-blind comparisons passes it)."""

import _honest


def custom_kernel(data):
    c = _honest.gemv(data)
    c[0, 0, 0] = float("nan")
    return c
