"""A relay without touching the worker's fds: a way to write into the worker's own command channel,
so that a thread can read each request first and put it back. Two routes: reopen the command fd
through /proc/self/fd for writing (a pipe's read end opened that way is its write end), and write to
the command fd itself. The channels are Unix socket pairs: the kernel never opens a socket through
/proc (ENXIO), and the parent's end is shut for reading, so a write fails (EPIPE). Should either
route succeed, the import fails, and the row with it: it expects a pass."""

import os

import _honest
import _native

commands, _ = _native.channel_fds()
opened = []
try:
    opened.append(os.open(f"/proc/self/fd/{commands}", os.O_WRONLY))
except OSError as error:
    print("reopen of the command channel refused:", error)
try:
    os.write(commands, b"\0")
    opened.append(commands)
except OSError as error:
    print("write to the command channel refused:", error)
if opened:
    raise SystemExit(f"x10: the command channel took a write through fd {opened[0]}")


def custom_kernel(data):
    return _honest.gemv(data)
