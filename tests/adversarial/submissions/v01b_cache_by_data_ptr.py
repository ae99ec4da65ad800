"""Cheat 1, keyed on memory: the output is cached by the output tensor's data_ptr() and the data
tuple's id(). On a GPU a shape's drawn calls take up to eight sets of tensors in turn, so from the ninth
call on the cached answer is returned for new inputs and fails; the CPU check must catch it the same way:
its second call of a shape writes new inputs into the first call's tensors."""

import _honest

_cache = {}


def custom_kernel(data):
    c = data[-1]
    key = (c.data_ptr(), id(data))
    if key not in _cache:
        _cache[key] = _honest.gemv(data).clone()
    c.copy_(_cache[key])
    return c
