"""Truncate the parent's output file (issue 33): a thread shrinks it to nothing and grows it back,
again and again, so that the parent would read past its end (or fault, had it mapped it). The parent
sealed the file's size before the worker existed: both are refused, the run passes (the parent's
own check of a file that ends early is tests/test_output_file.py). It raises if one is not refused."""

import os
import threading
import time

import _honest
import _reach

from harness.contract import output_file

fd = _reach.worker().outputs_fd
allowed = []


def truncate():
    while True:
        for size in (0, output_file.FILE_BYTES + 4096):
            try:
                os.ftruncate(fd, size)
                allowed.append(size)
            except PermissionError:
                pass
        time.sleep(1e-4)


threading.Thread(target=truncate, daemon=True).start()


def custom_kernel(data):
    if allowed:
        raise RuntimeError(f"the output file was resized to {allowed[0]} bytes")
    return _honest.gemm(data)
