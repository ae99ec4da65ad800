"""Cheat 7: look for the organizer's secret seed in the worker's own environment (os.environ and
/proc/self/environ). Raises if it finds it, so the expected verdict, run in ranked mode by an
evaluator that has NVFP4_SECRET_SEED in its environment, is passed. A worker that is not dumpable
(the sandbox's default) cannot even open /proc/self/environ: nothing leaks there either."""

import os

import _honest

NAME = "NVFP4_SECRET_SEED"


def custom_kernel(data):
    leaks = [f"os.environ[{key}]" for key in os.environ if NAME in key or "SECRET" in key.upper()]
    try:
        with open("/proc/self/environ", "rb") as handle:
            if NAME.encode() in handle.read():
                leaks.append("/proc/self/environ")
    except PermissionError:
        pass
    if leaks:
        raise RuntimeError(f"found the secret seed in {', '.join(leaks)}")
    return _honest.gemv(data)
