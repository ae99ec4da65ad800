"""Sealed class: call the compiled core directly: re-key it with a known key, bind a fake kernel,
time a nested call. Each must be refused; any that worked would show (results under a wrong key are
rejected; the fake kernel's zeros fail). Where the syscall supervisor runs, the refused bind and
time_call are seen as well: each opened the core's call-state page before refusing, and the parent
finds more openings than the core makes for the results it signed."""

import os

import _honest
import torch

from harness.worker import _sealed

read_fd, write_fd = os.pipe()
os.write(write_fd, bytes(32))
os.close(write_fd)
refused = []
for attempt in (lambda: _sealed.init(read_fd, None, 0, {}),
                lambda: _sealed.bind(lambda path: type("Fake", (), {"custom_kernel": staticmethod(torch.zeros_like)}),
                                     "fake")):
    try:
        attempt()
    except RuntimeError as error:
        refused.append(str(error))


def custom_kernel(data):
    try:
        _sealed.time_call(data, 10**9, 0, 0.0)  # nested: would sign a result the harness did not ask for
    except RuntimeError as error:
        refused.append(str(error))
    return _honest.gemv(data)
