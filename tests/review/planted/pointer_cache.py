"""Planted: outputs replayed by the address of the first input (fresh inputs that the allocator
places at an address seen before get the old answer)."""

from reference import ref_kernel

_seen = {}


def _answer(data):
    where = data[0].data_ptr()
    found = _seen.get(where)
    if found is None:
        found = ref_kernel(data)
        _seen[where] = found
    return found


def custom_kernel(data):
    return _answer(data)
