"""Sabotage by signal: every worker runs as the same unprivileged uid, so a submission could stop or
kill another entry's worker running beside it (a cluster host), or the blank worker waiting for the
next file. Here the targets are the run's own reaper and the evaluator above it, with signal 0 (the
permission check alone, nothing delivered), so a rule that fails does no harm to the run: the row
then crashes instead. The syscall supervisor refuses both (rule 'signals'), and lets a signal to a
process the submission started itself through."""

import os
import subprocess
import sys

import _honest

reaper = os.getppid()
try:
    with open(f"/proc/{reaper}/stat") as handle:
        evaluator = int(handle.read().rsplit(")", 1)[1].split()[1])
except PermissionError:  # Landlock grants no other process's /proc files: a guess, outside the run all the same
    evaluator = reaper - 1
reached = []
for target in (reaper, evaluator):
    try:
        os.kill(target, 0)
        reached.append(target)
    except PermissionError:
        pass
if reached:
    raise RuntimeError(f"a signal reached a process outside the run: {reached}")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
child.kill()  # its own child: allowed
child.wait()


def custom_kernel(data):
    return _honest.gemv(data)
