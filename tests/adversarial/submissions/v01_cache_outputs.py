"""Cheat 1: cache outputs across calls. The key is the shapes of the inputs; where a harness reuses
its input objects, a key on id(), data_ptr(), _version or a fingerprint of a few bytes hits the
same way. Fresh inputs on every call make the cached answer wrong from the second call on."""

import _honest

_cache = {}


def custom_kernel(data):
    a, b, c = data[0], data[1], data[-1]
    key = (tuple(a.shape), tuple(b.shape))
    if key not in _cache:
        _cache[key] = _honest.gemv(data).clone()
    c.copy_(_cache[key])
    return c
