"""Swap the parent's output file (issue 33): dup2 a memfd of the submission's own over the worker's
descriptor of it, so that the core (which maps the file again for a larger output) would write where
the submission reads and writes freely. The syscall supervisor refuses the dup2 (rule 'channels');
without it, the parent still reads its own file, and a stale one fails the MAC."""

import os

import _honest
import _reach

fd = _reach.worker().outputs_fd
own = os.memfd_create("not-the-parents")
os.ftruncate(own, 1 << 31)
try:
    os.dup2(own, fd)
    print("the output file's descriptor now names our memfd")
except OSError as error:
    print("dup2 over the output file refused:", error)


def custom_kernel(data):
    return _honest.gemm(data)
