"""Cheat 5: replace the clock the harness's own timer captured (harness.worker.timers._perf_counter), the
way round a timer that keeps the originals of time.perf_counter and torch.cuda.Event."""

import itertools

import _honest

import harness.worker.timers

_ticks = itertools.count()
harness.worker.timers._perf_counter = lambda: next(_ticks) * 1e-9  # 1 ns per reading


def custom_kernel(data):
    return _honest.gemv(data)
