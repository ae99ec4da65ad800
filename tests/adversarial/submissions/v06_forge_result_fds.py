"""Cheat 6: forge the result channel. The channel is inherited by the worker (a socket pair; a pipe
until 2026-11-26), so write to every pipe and socket among fds 3..255 a well-formed 'output' message
(the right values, time_us=0.001), then garbage and fake result lines. (Other fds are left alone:
garbage written to a GPU driver's fd proves nothing and could disturb the device.)"""

import os
import stat

import _honest

from harness.contract import protocol

FORGED_HEADER = {"op": "output", "time_us": 0.001, "host_us": 0.001, "structure": "tensor", "unfinished": False}


def custom_kernel(data):
    c = _honest.gemv(data)
    for fd in range(3, 256):
        try:
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                continue
            protocol.send(fd, FORGED_HEADER, [c])
            os.write(fd, b"\xff\xff\xff\x7fcheck: pass\nbenchmark: 1.0 us\n" + os.urandom(64))
        except OSError:
            continue
    return c
