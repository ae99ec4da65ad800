"""The timing ladder's short rungs across worker processes: a copy of the problem holding only chosen
rungs, and the summary of ranked runs of it (issue 38; GPU for ``--replay``).

A short rung's median moves from one worker process to the next (docs/timing.md, "The short rungs move by
worker process"), so these rungs are run in many processes: ``gpu_check.sh ladder_b2b`` (ten in a row, the
acceptance) and scripts/launch_path_probe.py. Per rung across the runs: the medians; with ``--replay``,
the replay clock's reading of the same rung (measured here, one process: it reads alike across processes)
and how many medians lie inside max(3%, 0.2 us) of it; and the spread across processes of the median, of
the event overhead each run subtracted, and of the events' raw time (median plus overhead), with the
correlation of the last two: an overhead that moved with the raw time would cancel in the median, one that
does not adds to its spread.

    python3 scripts/ladder_rungs.py copy FOLDER N:ITERS ...       (prints the copy's folder)
    python3 scripts/ladder_rungs.py summary RUN.json ... [--replay]
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

import yaml
from clock_checks import HARNESS_BAND, in_band  # this folder's decisions

from harness.contract.task_spec import shape_text

ROOT = Path(__file__).resolve().parents[1]
LADDER = "timing_ladder"
LADDER_FILE = ROOT / "submissions" / LADDER / "triton_ladder.py"


def ladder_copy(folder: Path, rungs: list[tuple[int, int]]) -> Path:
    """The ladder's problem folder under ``folder`` with only these (n, iters) rungs as benchmarks, readable
    by the workers' uid (``folder`` included: a fresh temporary folder is private to its user)."""
    copy = folder / LADDER
    shutil.copytree(ROOT / "problems" / LADDER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    spec = yaml.safe_load((copy / "task.yml").read_text())
    spec["benchmarks"] = [case for case in spec["benchmarks"] if (case["n"], case["iters"]) in rungs]
    (copy / "task.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def rung_rows(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """shape -> {"case": the case, "runs": [{"median_us", "overhead_us", "raw_us"}, ...] in run order}."""
    rows: dict[str, dict[str, Any]] = {}
    for result in results:
        for case in result.get("cases", []):
            if case["kind"] != "benchmark" or not case.get("timing"):
                continue
            median, overhead = case["timing"]["median_us"], case.get("event_overhead_us")
            row = rows.setdefault(shape_text(case["case"]), {"case": case["case"], "runs": []})
            row["runs"].append({"median_us": median, "overhead_us": overhead,
                                "raw_us": median + overhead if overhead is not None else None})
    return rows


def _sd(values: list[float]) -> str:
    return f"{statistics.stdev(values):.3f}" if len(values) > 1 else "-"


def summary_lines(rows: dict[str, dict[str, Any]], replay_us: dict[str, float] | None = None) -> list[str]:
    """Per rung: the medians, the in-band count against replay (when given), and the spreads across runs."""
    lines = []
    for shape, row in rows.items():
        runs = row["runs"]
        medians = [run["median_us"] for run in runs]
        line = f"{shape}: {len(runs)} runs, medians " + " ".join(f"{m:.2f}" for m in medians)
        if replay_us and shape in replay_us:
            inside = sum(bool(in_band(m, replay_us[shape], *HARNESS_BAND)) for m in medians)
            line += f"; replay {replay_us[shape]:.2f} us, {inside} of {len(medians)} inside max(3%, 0.2 us)"
        paired = [run for run in runs if run["overhead_us"] is not None]
        overheads, raws = [run["overhead_us"] for run in paired], [run["raw_us"] for run in paired]
        line += f"; sd across runs: median {_sd(medians)}, overhead {_sd(overheads)}, raw events {_sd(raws)}"
        if len(paired) > 2 and statistics.stdev(overheads) > 0 and statistics.stdev(raws) > 0:
            line += f" (overhead ~ raw correlation {round(statistics.correlation(overheads, raws), 2) + 0.0:.2f})"
        lines.append(line)
    return lines


def replay_readings(cases: list[dict[str, Any]]) -> dict[str, float]:
    """The replay clock's reading of each ladder case, by the shipped ladder file (GPU only)."""
    from harness.sol.replay_clock import ReplayClock, load_shipped, shape_inputs

    kernel, clock = load_shipped(LADDER_FILE), ReplayClock()
    return {shape_text(case): clock.time(kernel, shape_inputs(LADDER, case)).us for case in cases}


def main(argv: list[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "copy" and args:
        print(ladder_copy(Path(args[0]), [tuple(map(int, rung.split(":"))) for rung in args[1:]]))
        return 0
    if command == "summary":
        paths = [Path(arg) for arg in args if arg != "--replay"]
        rows = rung_rows([json.loads(path.read_text()) for path in paths if path.exists()])
        replay = replay_readings([row["case"] for row in rows.values()]) if "--replay" in args and rows else None
        print("\n".join(summary_lines(rows, replay)))
        return 0
    print(__doc__.rsplit("\n\n", 1)[-1].rstrip(), file=sys.stderr)  # the usage lines
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
