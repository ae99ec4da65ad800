"""Precompute through the command channel (issue 40): dup2 a pipe of the submission's own over the
worker's command fd; a relay thread reads each request from the real channel first (its seed, its
shapes), could solve it, then forwards it, so the worker learns a call only once its answer is
ready. Plain Python, no native code. The syscall supervisor refuses the dup2 (rule 'channels')."""

import os
import threading

import _honest
import _native

from harness.contract import protocol

commands, _ = _native.channel_fds()
real = os.dup(commands)
relay_r, relay_w = os.pipe()


def relay():
    while True:
        header, tensors = protocol.receive(real)
        protocol.send(relay_w, header, tensors)  # here the relay knows the call before the worker


try:
    os.dup2(relay_r, commands)
    threading.Thread(target=relay, daemon=True).start()
    print("relay in place")
except OSError as error:
    print("dup2 over the command fd refused:", error)


def custom_kernel(data):
    return _honest.gemv(data)
