"""Cheat 12: behave during warm-up. The first calls of each shape get the right answer, later
ones (the timed calls) return c untouched."""

import _honest

HONEST_CALLS = 3
_calls = {}


def custom_kernel(data):
    c = data[-1]
    seen = _calls[tuple(c.shape)] = _calls.get(tuple(c.shape), 0) + 1
    return _honest.gemv(data) if seen <= HONEST_CALLS else c
