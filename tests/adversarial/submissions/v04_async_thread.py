"""Cheat 4, CPU form: return c at once and let a background thread fill it in later."""

import threading
import time

import _honest


def custom_kernel(data):
    def finish_later():
        time.sleep(1.0)
        _honest.gemv(data)

    threading.Thread(target=finish_later, daemon=True).start()
    return data[-1]
