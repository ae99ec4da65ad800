"""Cheat 2, batch-and-skip: do real work on one call in eight and return the previous result on
the others (with back-to-back batches timed as one, the skipped calls look free)."""

import _honest

_state = {"calls": 0, "last": None}


def custom_kernel(data):
    c = data[-1]
    last = _state["last"]
    if _state["calls"] % 8 == 0 or last is None or last.shape != c.shape:
        _state["last"] = last = _honest.gemv(data).clone()
    _state["calls"] += 1
    c.copy_(last)
    return c
