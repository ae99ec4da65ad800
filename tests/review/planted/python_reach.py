"""Planted: Python reach: the caller's frames and every live object."""

import gc
import sys

from reference import ref_kernel


def custom_kernel(data):
    caller = sys._getframe(1).f_back
    if caller is not None:
        caller.f_locals.get("timer")
    gc.get_objects()
    return ref_kernel(data)
