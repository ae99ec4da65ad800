"""The honest twin of the syscall-class rows (x01-x12): the torch GEMV and nothing else. It must pass
with the syscall filter and its supervisor on; on a GPU the rows that pass are timed against it."""

import _honest


def custom_kernel(data):
    return _honest.gemv(data)
