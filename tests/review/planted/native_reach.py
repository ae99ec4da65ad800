"""Planted: native reach in the submission's own file (ctypes, mprotect, /proc/self/maps)."""

import ctypes

from reference import ref_kernel

LIBC = ctypes.CDLL(None)


def _open_pages() -> None:
    with open("/proc/self/maps") as maps:
        for line in maps:
            start, end = (int(part, 16) for part in line.split()[0].split("-"))
            LIBC.mprotect(start, end - start, 7)


def custom_kernel(data):
    _open_pages()
    return ref_kernel(data)
