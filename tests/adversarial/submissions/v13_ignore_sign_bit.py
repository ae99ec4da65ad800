"""Cheat 13, degenerate inputs: a decode that ignores the e2m1 sign bit. It passes only if the
inputs never use negative codes; every code appears in the generated inputs."""

import _honest

UNSIGNED = tuple(abs(v) for v in _honest.E2M1)


def custom_kernel(data):
    return _honest.gemv(data, table=UNSIGNED)
