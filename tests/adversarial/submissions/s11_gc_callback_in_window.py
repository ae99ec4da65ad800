"""Sealed class (issue 23): a gc callback that does the call's work while the core reads the
outputs. Every object the core allocates after custom_kernel returned (the output tuple, the
storage and size objects) could start a collection, and gc.callbacks run the submission's
Python then: with threshold 1 the first allocation after the end event fills the output before
the core copies it. The core now disables the collector from the flush to the MAC, so the
callback runs only after the copy and the unfilled output fails the check."""

import gc

import _honest

pending = {}


def _finish(phase, info):
    data = pending.pop("data", None)
    if data is not None and phase == "start":
        _honest.gemv(data)


gc.freeze()  # what exists now is never collected again: collections stay cheap at threshold 1
gc.set_threshold(1, 1_000_000, 1_000_000)
gc.callbacks.append(_finish)


def custom_kernel(data):
    pending["data"] = data
    return data[-1]  # c, still NaN-poisoned: the callback was to fill it
