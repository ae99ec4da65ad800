"""Planted: a submission that looks honest; its native detour is in the helper it imports."""

import _detour_native

from reference import ref_kernel

_detour_native.install()


def custom_kernel(data):
    return ref_kernel(data)
