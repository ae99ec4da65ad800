"""Poke the core's sealed table from outside the address space (issue 40, after pygpubench's ptrace
exploit): restore the worker's dumpable flag, fork a child that attaches to the worker with ptrace and
writes with PTRACE_POKEDATA (which passes mseal). Both steps are refused by the syscall supervisor:
prctl(PR_SET_DUMPABLE, 1) (rule 'dumpable', the first one, which names the rejection) and ptrace."""

import ctypes
import os

import _honest
import _native

PR_SET_DUMPABLE, PTRACE_SEIZE = 4, 0x4206
if _native.LIBC.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0:
    print("prctl(PR_SET_DUMPABLE, 1) refused:", _native.errno_text())
worker = os.getpid()
child = os.fork()
if child == 0:
    attached = _native.LIBC.ptrace(PTRACE_SEIZE, worker, None, None) == 0
    os._exit(0 if attached else ctypes.get_errno())
_, status = os.waitpid(child, 0)
print("ptrace from the child:", "attached" if os.WEXITSTATUS(status) == 0 else os.strerror(os.WEXITSTATUS(status)))


def custom_kernel(data):
    return _honest.gemv(data)
