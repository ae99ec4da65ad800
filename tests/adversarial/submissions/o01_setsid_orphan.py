"""Issue 23, nothing outlives the run: at import, start a sleeper that leaves the worker's process
group and session (fork, setsid, fork again: its parent exits, so it is an orphan) and ignores
SIGTERM and SIGHUP. Left alive, it would outlast the run and, running as the same user, could
signal the next entries' workers. custom_kernel raises if the sleeper is not running, so a passed
verdict says it ran through the run; tests/test_sandbox.py checks that none is left after it (the
reaper kills it, or its PID namespace ends). Its command line carries ORPHAN_TAG (the test's)."""

import os
import signal
import sys

import _honest

TAG = os.environ.get("ORPHAN_TAG", "nvfp4-orphan")
SLEEP = "import time\nwhile True:\n    time.sleep(60)"


def _start_sleeper():
    read, write = os.pipe()
    if os.fork() == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                os.write(write, str(os.getpid()).encode())
                os.execv(sys.executable, [sys.executable, "-c", SLEEP, TAG])
        finally:
            os._exit(0)
    os.close(write)
    os.wait()
    pid = int(os.read(read, 32) or b"0")
    os.close(read)
    print(f"sleeper {pid} started, tag {TAG}", flush=True)
    return pid


SLEEPER = _start_sleeper()


def custom_kernel(data):
    os.kill(SLEEPER, 0)  # ProcessLookupError once it is gone
    return _honest.gemv(data)
