"""Rewrite an output where the parent reads it, after the core signed it (issue 33). A call's outputs
that leave the pipe lie where the worker's process can write them: on the CPU in the parent's output
file (the core copies them there after the MAC), on a GPU in the parent's device snapshot (the core
copies them there on the device; its address lies only on the core's hidden page, so this finds it as
native code would, by asking the driver: _snapshot.find). A gc callback (threshold 1; the collector
is off in the core's window, so it first runs in the worker's Python after the core returned, before
the reply goes) writes the output with one bit changed there, as a submission that finishes its work
late would write the rest. The parent digests its own copy of what it read against the MAC'd digest:
rejected (MAC). On a GPU it raises where it finds no snapshot, so that a harness without one shows as
this row's mismatch."""

import ctypes
import gc
import os

import _honest
import _reach
import _snapshot
import torch

late = {"bytes": None, "write": None}


def file_writer():
    fd = _reach.worker().outputs_fd
    return lambda data: os.pwrite(fd, data, 0)  # the output's storage is the first thing in the file


def snapshot_writer(near: int):
    at = _snapshot.find(near)  # the first output lies at the snapshot's start
    return lambda data: _snapshot.driver().cuMemcpyHtoD_v2(ctypes.c_ulonglong(at), ctypes.c_char_p(data),
                                                           ctypes.c_size_t(len(data)))


def rewrite(phase, info):
    if late["bytes"] is not None and late["write"] is not None:
        late["write"](late["bytes"])
        late["bytes"] = None


def custom_kernel(data):
    c = _honest.gemm(data)
    if late["write"] is None:
        late["write"] = snapshot_writer(c.data_ptr()) if c.is_cuda else file_writer()
    changed = bytearray(c.view(-1).view(torch.uint8).cpu().numpy().tobytes())
    changed[0] ^= 1  # the lowest mantissa bit of the first element
    late["bytes"] = bytes(changed)
    return c


gc.set_threshold(1)
gc.callbacks.append(rewrite)
