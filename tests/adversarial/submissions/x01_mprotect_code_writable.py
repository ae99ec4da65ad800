"""Forged time by patching code (issue 40): make the page of the code every time goes through
writable, to detour it (libcuda's cuEventElapsedTime_v2 on a GPU, whose pointer the core sealed but
whose code it cannot; libc's clock_gettime, the core's clock, on the CPU). First writable and
executable at once, then writable alone; with either, a jump to a function returning half the
time would follow. The syscall supervisor refuses both: W^X (rule 'wx') and code that never
becomes writable (rule 'code', which rejects the run)."""

import ctypes

import _honest
import _native

WHAT, ADDRESS = _native.timing_code()
PAGE = _native.page_of(ADDRESS)
for prot in (_native.PROT_READ | _native.PROT_WRITE | _native.PROT_EXEC, _native.PROT_READ | _native.PROT_WRITE):
    if _native.LIBC.mprotect(PAGE, _native.PAGE, prot) == 0:
        ctypes.memmove(ADDRESS, bytes(ctypes.string_at(ADDRESS, 1)), 1)  # writable: the detour would go here
        _native.LIBC.mprotect(PAGE, _native.PAGE, _native.PROT_READ | _native.PROT_EXEC)
        print(f"{WHAT}: its code page became writable")
        break
    print(f"{WHAT}: mprotect {prot} refused: {_native.errno_text()}")


def custom_kernel(data):
    return _honest.gemv(data)
