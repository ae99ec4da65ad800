"""What the syscall-class rows (x01-x12) share: libc through ctypes, pages, and the worker's own fds.

Not a submission (its name starts with an underscore). Everything here is what any submission can
do with ctypes; the rows show that the syscall supervisor refuses each step that would matter.
"""

import ctypes
import os

import _reach

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
LIBC.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
LIBC.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
LIBC.ptrace.restype = ctypes.c_long
LIBC.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
PAGE = 4096
PROT_NONE, PROT_READ, PROT_WRITE, PROT_EXEC = 0, 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
MAP_FAILED = ctypes.c_void_p(-1).value


def page_of(address):
    return address & ~(PAGE - 1)


def function_address(library, name):
    """Where ``name`` of ``library`` (a loaded shared object) starts, or None."""
    try:
        return ctypes.cast(getattr(ctypes.CDLL(library), name), ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None


def timing_code():
    """(what, address) of the code the harness's time goes through: libcuda's elapsed-time entry on a
    GPU (what a detour would patch), else libc's clock_gettime (the core's clock on the CPU)."""
    for library, name in (("libcuda.so.1", "cuEventElapsedTime_v2"), (None, "clock_gettime")):
        address = function_address(library, name)
        if address:
            return f"{library or 'libc'}:{name}", address
    raise RuntimeError("no timing code found")


def errno_text():
    return os.strerror(ctypes.get_errno())


def channel_fds():
    """The worker's command and result fds, found on its instance through gc (as s03 finds send)."""
    worker = _reach.worker()
    return worker.commands_fd, worker.results_fd
