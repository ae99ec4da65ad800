"""SIGKILL one Dask worker of a `--cluster local` leaderboard while it evaluates (scripts/two_gpu_check.sh).

The leaderboard's local cluster workers are its spawned children; a busy one has a submission
worker (harness.worker.serve_loop) below it. Waits until one is busy for --after-s seconds, kills
the first such worker (its Nanny restarts it; the job is run once more), prints what it killed.

    python3 scripts/kill_busy_worker.py LEADERBOARD_PID [--after-s 5] [--timeout-s 300]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

import psutil


def busy_workers(leaderboard: psutil.Process) -> list[psutil.Process]:
    workers = [child for child in leaderboard.children() if "spawn_main" in " ".join(child.cmdline())]
    return [worker for worker in workers
            if any("serve_loop" in " ".join(c.cmdline()) for c in worker.children(recursive=True))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("--after-s", type=float, default=5.0, help="how long a worker evaluates before the kill")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    args = parser.parse_args()
    leaderboard = psutil.Process(args.pid)
    deadline = time.monotonic() + args.timeout_s
    busy_since: dict[int, float] = {}
    while time.monotonic() < deadline:
        try:
            now = time.monotonic()
            busy = busy_workers(leaderboard)
            busy_since = {worker.pid: busy_since.get(worker.pid, now) for worker in busy}  # idle ones start over
            for worker in busy:
                since = busy_since[worker.pid]
                if now - since >= args.after_s:
                    worker.send_signal(signal.SIGKILL)
                    print(f"Dask worker pid {worker.pid}, {now - since:.1f} s into an evaluation")
                    return 0
        except psutil.Error:  # a process ended while looked at: look again
            pass
        time.sleep(0.2)
    print("no Dask worker was busy long enough to kill")
    return 1


if __name__ == "__main__":
    sys.exit(main())
