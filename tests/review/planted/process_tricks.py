"""Planted: process tricks: a thread started at import, fork and setsid."""

import os
import threading
import time

from reference import ref_kernel


def _meddle() -> None:
    while True:
        time.sleep(0.001)


threading.Thread(target=_meddle, daemon=True).start()
if os.fork() == 0:
    os.setsid()


def custom_kernel(data):
    return ref_kernel(data)
