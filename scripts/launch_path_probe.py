"""Does a short kernel's per-process offset come with its stream launch? Issue 38's probe (GPU only).

A short rung's ranked median moves from one worker process to the next (sd 0.08-0.2 us at 2 us on an
H200), in torch's event timer as in the core's, while graph replay of the same kernel does not
(docs/timing.md, "The short rungs move by worker process"). One candidate: a stream launch has the GPU
front end fetch the kernel's descriptor and parameters from wherever the driver put them for this
process; a graph's are uploaded with the graph. So the ladder's 2 us memory rung and 10-iteration chain
are ranked in ten worker processes (``--processes``) for each of two files, alternated: the shipped ladder (a stream
launch per call) and scripts/graph_launched_ladder.py (the same kernel replayed from a
CUDA graph). Per file and rung (scripts/ladder_rungs.py's summary): the medians, how many lie in the band
of the replay clock's reading, and the spread across processes of median, overhead and raw event time.
If the graph-launched medians hold still where the plain ones move, the stream launch carries the offset.

    python3 scripts/launch_path_probe.py OUT.json [--processes 10]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ladder_rungs import LADDER_FILE, ROOT, ladder_copy, replay_readings, rung_rows, summary_lines  # this folder's

FILES = {"stream launch": LADDER_FILE, "graph launch": ROOT / "scripts" / "graph_launched_ladder.py"}
RUNGS = [(65536, 1), (270336, 10)]
"""(n, iters): the 2 us memory rung and the 2 us FMA chain, the rungs that move most by process."""
EVAL_LIMIT_S = 120


def ranked_run(problem: Path, path: Path, secret: Path, out: Path) -> dict[str, Any]:
    """One `harness eval --mode leaderboard` process; its result JSON ({} when it gave none)."""
    command = [sys.executable, "-m", "harness", "eval", str(problem), str(path), "--mode", "leaderboard",
               "--secret-seed-file", str(secret), "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=EVAL_LIMIT_S, cwd=ROOT)
    out.with_suffix(".log").write_text(done.stdout + done.stderr)
    return json.loads(out.read_text()) if out.exists() else {}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--processes", type=int, default=10, help="ranked worker processes per file")
    args = parser.parse_args(argv)
    problem = ladder_copy(Path(tempfile.mkdtemp(prefix="launch-path-")), RUNGS)
    secret = args.out.parent / "launch_path_secret"
    secret.touch(mode=0o600)  # harness.seeds refuses a secret file others may read
    secret.write_text(str(secrets.randbits(62)))
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in FILES}
    for index in range(args.processes):  # alternated, so drift over the call falls on both files alike
        for label, path in FILES.items():
            result = ranked_run(problem, path, secret, args.out.parent / f"launch_path_{index}_{label[0]}.json")
            results[label].append(result)
            print(f"process {index} {label}: exit {result.get('exit_code')}", flush=True)
    rows = {label: rung_rows(runs) for label, runs in results.items()}
    replay = replay_readings([row["case"] for row in rows["stream launch"].values()])
    for label in FILES:
        print("\n".join(f"{label}: {line}" for line in summary_lines(rows[label], replay)))
    args.out.write_text(json.dumps({"processes": args.processes, "rows": rows, "replay_us": replay}, indent=2))
    os.remove(secret)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
