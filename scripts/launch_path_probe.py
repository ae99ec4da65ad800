"""Does a short kernel's per-process offset come with its stream launch? Issue 38's probe (GPU only).

A short rung's ranked median moves from one worker process to the next (sd 0.08-0.2 us at 2 us on an
H200), in torch's event timer as in the core's, while graph replay of the same kernel does not
(docs/timing.md, "The short rungs move by worker process"). One candidate: a stream launch has the GPU
front end fetch the kernel's descriptor and parameters from wherever the driver put them for this
process; a graph's are uploaded with the graph. So the ladder's 2 us memory rung and 10-iteration chain
are ranked in PROCESSES worker processes for each of two files, alternated: the shipped ladder (a stream
launch per call) and scripts/graph_launched_ladder.py (the same kernel replayed from a
CUDA graph). Per file and rung: every process's median, subtracted overhead and second clock, the
spread of the medians across processes, and the replay clock's reading of the rung. If the graph-launched
medians hold still where the plain ones move, the stream launch carries the offset.

    python3 scripts/launch_path_probe.py OUT.json [--processes 10]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
LADDER = "timing_ladder"
FILES = {"stream launch": ROOT / "submissions" / LADDER / "triton_ladder.py",
         "graph launch": ROOT / "scripts" / "graph_launched_ladder.py"}
RUNGS = ((65536, 1), (270336, 10))
"""(n, iters): the 2 us memory rung and the 2 us FMA chain, the rungs that move most by process."""
EVAL_LIMIT_S = 120


def ladder_copy(folder: Path) -> Path:
    """The ladder's problem folder with only RUNGS as benchmarks, readable by the workers' uid."""
    copy = folder / LADDER
    shutil.copytree(ROOT / "problems" / LADDER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    spec = yaml.safe_load((copy / "task.yml").read_text())
    spec["benchmarks"] = [case for case in spec["benchmarks"] if (case["n"], case["iters"]) in RUNGS]
    (copy / "task.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def case_figures(result: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per benchmark shape of one ranked run: its median, the overhead it subtracted, its second clock."""
    figures = {}
    for case in result.get("cases", []):
        if case["kind"] == "benchmark" and case.get("timing"):
            shape = " ".join(f"{k}={v}" for k, v in case["case"].items() if k != "seed")
            figures[shape] = {"median_us": case["timing"]["median_us"], "overhead_us": case.get("event_overhead_us"),
                              "second_clock_us": case.get("second_clock_us")}
    return figures


def spread(runs: list[dict[str, dict[str, float | None]]], shape: str) -> dict[str, Any]:
    """One file's medians of one shape across its processes: the list, their sd, and the overheads' sd."""
    medians = [run[shape]["median_us"] for run in runs if shape in run]
    overheads = [run[shape]["overhead_us"] for run in runs if shape in run and run[shape]["overhead_us"] is not None]
    return {"medians_us": medians, "sd_us": statistics.stdev(medians) if len(medians) > 1 else None,
            "overhead_sd_us": statistics.stdev(overheads) if len(overheads) > 1 else None}


def spread_text(label: str, figures: dict[str, Any]) -> str:
    """One file's line part: its medians' range across processes and their sd."""
    medians, sd = figures["medians_us"], figures["sd_us"]
    if not medians:
        return f"{label}: no median"
    if sd is None:
        return f"{label} {medians[0]:.3f} us (one process)"
    return f"{label} {min(medians):.3f}-{max(medians):.3f} us, sd {sd:.3f}"


def ranked_run(problem: Path, path: Path, secret: Path, out: Path) -> dict[str, Any]:
    """One `harness eval --mode leaderboard` process; its result JSON ({} when it gave none)."""
    command = [sys.executable, "-m", "harness", "eval", str(problem), str(path), "--mode", "leaderboard",
               "--secret-seed-file", str(secret), "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=EVAL_LIMIT_S, cwd=ROOT)
    out.with_suffix(".log").write_text(done.stdout + done.stderr)
    return json.loads(out.read_text()) if out.exists() else {}


def replay_readings() -> dict[str, float]:
    """The replay clock's reading of each rung (one process: it reads alike across processes)."""
    from harness.sol.replay_clock import ReplayClock, load_shipped, shape_inputs

    kernel, clock = load_shipped(FILES["stream launch"]), ReplayClock()
    return {f"n={n} iters={iters}": clock.time(kernel, shape_inputs(LADDER, {"n": n, "iters": iters, "seed": 2025})).us
            for n, iters in RUNGS}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--processes", type=int, default=10, help="ranked worker processes per file")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="launch-path-"))
    problem, secret = ladder_copy(folder), args.out.parent / "launch_path_secret"
    secret.touch(mode=0o600)  # harness.seeds refuses a secret file others may read
    secret.write_text(str(secrets.randbits(62)))
    runs: dict[str, list[dict[str, dict[str, float | None]]]] = {label: [] for label in FILES}
    for index in range(args.processes):  # alternated, so drift over the call falls on both files alike
        for label, path in FILES.items():
            result = ranked_run(problem, path, secret, args.out.parent / f"launch_path_{index}_{label[0]}.json")
            runs[label].append(case_figures(result))
            print(f"process {index} {label}: exit {result.get('exit_code')} " + "; ".join(
                f"{shape} {fig['median_us']:.3f} us (overhead {fig['overhead_us']}, second clock "
                f"{fig['second_clock_us']})" for shape, fig in runs[label][-1].items()), flush=True)
    replay = replay_readings()
    summary = {shape: {label: spread(runs[label], shape) for label in FILES} | {"replay_us": replay_us}
               for shape, replay_us in replay.items()}
    for shape, row in summary.items():
        parts = "; ".join(spread_text(label, row[label]) for label in FILES)
        print(f"{shape}: replay {row['replay_us']:.3f} us; {parts}")
    args.out.write_text(json.dumps({"processes": args.processes, "runs": runs, "summary": summary}, indent=2))
    os.remove(secret)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
