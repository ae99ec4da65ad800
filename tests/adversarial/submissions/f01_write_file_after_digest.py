"""Rewrite an output after the core signed it (issue 33): the core copies the outputs into the
parent's output file after the MAC, and the file is writable from the worker's process. A gc
callback (threshold 1; the collector is off in the core's window, so it first runs in the worker's
Python after the core returned, before the reply goes) writes the output with one bit changed into
the file, as a submission that finishes its work late would write the rest. The parent digests what
it read from the file against the MAC'd digest: rejected (MAC)."""

import gc
import os

import _honest
import _reach
import torch

fd = _reach.worker().outputs_fd
late = {"bytes": None}


def rewrite(phase, info):
    if late["bytes"] is not None:
        os.pwrite(fd, late["bytes"], 0)  # the output's storage is the first thing in the file
        late["bytes"] = None


def custom_kernel(data):
    c = _honest.gemm(data)
    changed = bytearray(c.view(-1).view(torch.uint8).cpu().numpy().tobytes())
    changed[0] ^= 1  # the lowest mantissa bit of the first element
    late["bytes"] = bytes(changed)
    return c


gc.set_threshold(1)
gc.callbacks.append(rewrite)
