"""Sealed class: a thread that keeps editing the harness's state (timer overhead, worker fields)
while every call runs."""

import threading

import _honest
import _reach

timer = _reach.timer()


def meddle():
    while True:
        timer.overhead_us = 40.0
        timer.spread_us = 0.0
        timer.persisting_l2_reset = False


threading.Thread(target=meddle, daemon=True).start()


def custom_kernel(data):
    return _honest.gemv(data)
