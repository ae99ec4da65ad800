"""SIGKILL one Dask worker of a `--cluster local` leaderboard while it evaluates (scripts/two_gpu_check.sh).

The leaderboard's local cluster workers are its spawned children; a busy one has a submission
worker (harness.worker.serve_loop) below it. Once the leaderboard's stamped log holds
--after-results result lines ('[k/N] ...': past the GPU check, whose copies run first), the
first worker whose evaluation began after that and has run --after-s seconds is killed (its
Nanny restarts it; the job is run once more). Prints what it killed.

    python3 scripts/kill_busy_worker.py LEADERBOARD_PID LOG [--after-results 1] [--after-s 5]
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import time
from pathlib import Path

import psutil


def command_line(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # it ended while looked at
        return ""


def evaluations(leaderboard: psutil.Process) -> dict[int, tuple[psutil.Process, psutil.Process]]:
    """The submission workers running now: their pid -> (their process, the Dask worker above them)."""
    running = {}
    try:
        workers = [w for w in leaderboard.children() if "spawn_main" in command_line(w)]
    except psutil.Error:  # the leaderboard ended
        return running
    for worker in workers:
        try:
            below = worker.children(recursive=True)
        except psutil.Error:
            continue
        running.update({child.pid: (child, worker) for child in below if "harness.worker.boot" in command_line(child)})
    return running


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("log", type=Path)
    parser.add_argument("--after-results", type=int, default=1, help="result lines in the log before a worker counts")
    parser.add_argument("--after-s", type=float, default=5.0, help="how long a worker evaluates before the kill")
    parser.add_argument("--timeout-s", type=float, default=300.0)
    args = parser.parse_args()
    leaderboard = psutil.Process(args.pid)
    deadline = time.monotonic() + args.timeout_s
    results = re.compile(r"^\S+ \[\d+/\d+\] ", re.MULTILINE)
    while len(results.findall(args.log.read_text(errors="replace"))) < args.after_results:
        if time.monotonic() > deadline or not leaderboard.is_running():
            print(f"fewer than {args.after_results} result(s) in {args.log}")
            return 1
        time.sleep(0.2)
    old = set(evaluations(leaderboard))  # evaluations begun before: the GPU check's copies among them
    while time.monotonic() < deadline and leaderboard.is_running():
        try:
            for pid, (evaluation, worker) in evaluations(leaderboard).items():
                into = time.time() - evaluation.create_time()
                if pid not in old and into >= args.after_s:
                    worker.send_signal(signal.SIGKILL)
                    print(f"Dask worker pid {worker.pid}, {into:.1f} s into an evaluation")
                    return 0
        except psutil.Error:  # a process ended while looked at: look again
            pass
        time.sleep(0.2)
    print("no Dask worker was busy long enough to kill")
    return 1


if __name__ == "__main__":
    sys.exit(main())
