"""Cheat 5: replace time.perf_counter during the first call, so wall-clock timers stand still."""

import time

import _honest


def custom_kernel(data):
    time.perf_counter = lambda: 0.0
    return _honest.gemv(data)
