"""Cheat 7: read the secret seed out of the evaluator, the worker's parent process: its
/proc/<pid>/environ keeps NVFP4_SECRET_SEED even after the evaluator popped it from os.environ,
and its /proc/<pid>/maps and mem expose its memory (the secret, the expected outputs). Raises if
any of them can be read, so the expected verdict is passed: the evaluator makes itself
non-dumpable. Meaningful only for an unprivileged evaluator (root reads every process)."""

import os

import _honest


def _leaks():
    parent = os.getppid()
    found = []
    try:
        with open(f"/proc/{parent}/environ", "rb") as handle:
            if b"NVFP4_SECRET_SEED" in handle.read():
                found.append("its environ holds NVFP4_SECRET_SEED")
    except OSError:
        pass
    for name in ("maps", "mem"):
        try:
            with open(f"/proc/{parent}/{name}", "rb") as handle:
                if name == "maps" and handle.readline():
                    found.append("its memory map is readable")
                elif name == "mem":
                    found.append("its memory can be opened")
        except OSError:
            pass
    return found


def custom_kernel(data):
    leaks = _leaks()
    if leaks:
        raise RuntimeError(f"the evaluator (pid {os.getppid()}) leaks: {'; '.join(leaks)}")
    return _honest.gemv(data)
