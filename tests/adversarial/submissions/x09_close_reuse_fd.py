"""The relay of x08 without dup2: close the worker's command fd and make a pipe at once, which takes
the lowest free number, the command fd's own; the real channel is read through a copy made before.
The syscall supervisor refuses the close (rule 'channels')."""

import os
import threading

import _honest
import _native

from harness.contract import protocol

commands, _ = _native.channel_fds()
real = os.dup(commands)
try:
    os.close(commands)
    relay_r, relay_w = os.pipe()
    print("the command fd's number now reads our pipe:", relay_r == commands)

    def relay():
        while True:
            protocol.send(relay_w, *protocol.receive(real))

    threading.Thread(target=relay, daemon=True).start()
except OSError as error:
    print("close of the command fd refused:", error)


def custom_kernel(data):
    return _honest.gemv(data)
