"""Where a leaderboard run's wall time went, from its stamped stderr (scripts/cluster_scaling.sh).

Each line of the log is '<epoch seconds> <the command's stderr line>' (bash's $EPOCHREALTIME,
stamped as the line arrived). From the lines the command already prints: the cluster's start
('... (started in X s)'), every job's start and end per worker ('gpu0 p/file.py: started',
'gpu0 p/file.py: finished in X s'; the serial run's '      p/file.py: started' and '[k/N] p/file.py'
lines), the last result and the command's end. Out: per worker its jobs and busy seconds, the
jobs cut short (started again: their worker died), the gap before the first job, the tail (the
last worker's end after the first ran out of work) and the time after the last result (closing
the cluster, writing the pages). The question it answers: is a slower run slower because of a
serial step, the cluster's start, one worker getting more work, a job run twice, or its end.

    python3 scripts/cluster_timeline.py LOG START_EPOCH END_EPOCH  -> JSON on stdout
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

STAMPED = re.compile(r"^(\d+\.\d+) (.*)$")
WORKER_EVENT = re.compile(r"^\s*(\S+) (\S+/\S+\.py): (started|finished in [\d.]+ s)$")
SERIAL_START = re.compile(r"^\s+(\S+/\S+\.py): started$")
RESULT = re.compile(r"^\[(\d+)/(\d+)\] (\S+/\S+\.py) \.\.\. ")
CLUSTER_START = re.compile(r"\(started in ([\d.]+) s\)")


def timeline(lines: list[str], start: float, end: float) -> dict:
    """The breakdown of one run (times in seconds after the command started)."""
    jobs: dict[str, list[dict]] = {}
    open_jobs: dict[tuple[str, str], float] = {}
    serial_open: dict[str, float] = {}
    results: list[float] = []
    cut_short: list[dict] = []
    cluster_start_s = None
    for raw in lines:
        match = STAMPED.match(raw.rstrip("\n"))
        if not match:
            continue
        at, text = float(match.group(1)) - start, match.group(2)
        if (found := CLUSTER_START.search(text)) and cluster_start_s is None:
            cluster_start_s = float(found.group(1))
        if event := WORKER_EVENT.match(text):
            worker, file, what = event.groups()
            if what == "started":
                if (worker, file) in open_jobs:  # started again: the first run was cut short (its worker died)
                    cut_short.append({"worker": worker, "file": file, "start_s": open_jobs[(worker, file)], "at_s": at})
                open_jobs[(worker, file)] = at
            elif (worker, file) in open_jobs:
                began = open_jobs.pop((worker, file))
                jobs.setdefault(worker, []).append({"file": file, "start_s": began, "end_s": at})
        elif serial := SERIAL_START.match(text):
            serial_open[serial.group(1)] = at
        elif result := RESULT.match(text):
            results.append(at)
            file = result.group(3)
            if file in serial_open:
                jobs.setdefault("serial", []).append({"file": file, "start_s": serial_open.pop(file), "end_s": at})
    workers = {}
    for worker, done in sorted(jobs.items()):
        busy = sum(job["end_s"] - job["start_s"] for job in done)
        span_end = max(job["end_s"] for job in done)
        workers[worker] = {"jobs": len(done), "busy_s": round(busy, 1),
                           "first_start_s": round(min(job["start_s"] for job in done), 1),
                           "last_end_s": round(span_end, 1), "files": [job["file"] for job in done]}
    wall = end - start
    ends = [w["last_end_s"] for w in workers.values()]
    return {
        "wall_s": round(wall, 1),
        "cluster_start_s": cluster_start_s,
        "first_job_start_s": min((w["first_start_s"] for w in workers.values()), default=None),
        "last_result_s": round(max(results), 1) if results else None,
        "after_last_result_s": round(wall - max(results), 1) if results else None,
        "tail_s": round(max(ends) - min(ends), 1) if len(ends) > 1 else 0.0,
        "workers": workers,
        "cut_short": cut_short + [{"worker": w, "file": f, "start_s": at} for (w, f), at in open_jobs.items()],
    }


def main(argv: list[str]) -> int:
    log, start, end = Path(argv[0]), float(argv[1]), float(argv[2])
    print(json.dumps(timeline(log.read_text(errors="replace").splitlines(), start, end), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
