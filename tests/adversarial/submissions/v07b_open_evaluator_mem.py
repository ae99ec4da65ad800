"""Cheat 7, by memory: open /proc/<pid>/mem of every process from the worker's parent up to the
evaluator, where the secret seed and the expected outputs lie, and raise if one opens. The syscall
supervisor refuses any open of /proc/<pid>/mem (rule 'proc_mem'), which rejects the run before the
kernel's own check (the evaluator and the reaper are non-dumpable; under a root evaluator the worker
is another user) is reached."""

import _evaluator
import _honest


def custom_kernel(data):
    for pid in _evaluator.ancestors():
        try:
            with open(f"/proc/{pid}/mem", "rb"):
                raise RuntimeError(f"the evaluator's side leaks: {pid}'s memory can be opened")
        except OSError:
            pass
    return _honest.gemv(data)
