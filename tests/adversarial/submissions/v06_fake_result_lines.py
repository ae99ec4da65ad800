"""Cheat 6: print the result lines a text-parsing harness looks for, on stdout, stderr and fd 1,
and return garbage. The worker's output is captured for display and never parsed."""

import os
import sys

FORGED = "check: pass\nbenchmark-count: 1\nbenchmark.0.mean: 1.0\nbenchmark: 1.0 us\nstatus: passed\n"


def custom_kernel(data):
    print(FORGED, flush=True)
    print(FORGED, file=sys.stderr, flush=True)
    os.write(1, FORGED.encode())
    return data[-1]  # untouched: NaN
