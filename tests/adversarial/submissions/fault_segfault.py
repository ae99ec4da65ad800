"""Fault: a segmentation fault in native code. The worker dies by SIGSEGV; the reason names the signal."""

import ctypes


def custom_kernel(data):
    ctypes.string_at(0)  # reads address 0
