"""A relay without touching the worker's fds: reopen the command pipe through /proc/self/fd for
writing (Linux opens a pipe's other end that way), so that a thread can read each request first and
put it back. The syscall supervisor refuses the open: it names one of the worker's channel pipes
(rule 'channels')."""

import os

import _honest
import _native

commands, _ = _native.channel_fds()
try:
    os.close(os.open(f"/proc/self/fd/{commands}", os.O_WRONLY))
    print("a write end of the command pipe")
except OSError as error:
    print("reopen of the command pipe refused:", error)


def custom_kernel(data):
    return _honest.gemv(data)
