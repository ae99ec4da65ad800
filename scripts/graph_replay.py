"""The fidelity table: every shipped baseline and ladder rung by graph replay beside the harness (GPU only).

Files: every ``submissions/*/triton_*.py`` (the ladder's rungs included, and the ladder launched twice
per call: the two-kernel row) and every problem's vendor file (task.yml ``vendor``: the cuBLAS files),
unless named. For each benchmark shape, the replay clock (harness.sol.replay_clock: each flushed call
timed inside one CUDA graph by %globaltimer stamps, the reference clock) beside the harness's median
from EVAL_JSON_DIR (``{problem}__{file}.json``, as ``harness eval --json`` writes them); with
``--eval-missing``, a file without one is run through ``harness eval --mode benchmark`` first. Each row
gets its verdict: the harness within max(3%, 0.2 us) of replay (issue 38's band). Files that cannot be
captured in a graph (they allocate or synchronise) or do not run on this GPU are reported as such. The
clock's floors (its stamps with nothing and with an empty kernel between them) are printed first and
written to OUT's ``_floors.json`` (scripts/ncu_times.py holds ncu's empty kernel against them); the
second-launch lines (scripts/clock_checks.py) close the output.

    python3 scripts/graph_replay.py OUT.json [EVAL_JSON_DIR [--eval-missing] [FILE ...]]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from clock_checks import HARNESS_BAND, additivity, additivity_lines, in_band  # this folder's decisions

from harness.contract.task_spec import list_problems, load_task, shape_text
from harness.sol.replay_clock import ReplayClock, load_shipped, shape_inputs


def default_files() -> list[Path]:
    """Every Triton baseline (the ladder's included) and every problem's vendor (cuBLAS) file."""
    vendors = [Path(os.path.relpath(task.vendor.file)) for task in map(load_task, list_problems()) if task.vendor]
    return sorted(Path("submissions").glob("*/triton_*.py")) + sorted(vendors)


def harness_medians(path: Path, eval_dir: Path | None, eval_missing: bool) -> dict[str, tuple[float, float | None]]:
    """(median, the event overhead it subtracted) per shape from the file's eval JSON, run first if asked."""
    if eval_dir is None:
        return {}
    record_path = eval_dir / f"{path.parent.name}__{path.stem}.json"
    if eval_missing and not record_path.is_file():
        subprocess.run([sys.executable, "-m", "harness", "eval", str(path), "--mode", "benchmark", "--json",
                        str(record_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    if not record_path.is_file():
        return {}
    record = json.loads(record_path.read_text())
    return {shape_text(c["case"]): (c["timing"]["median_us"], c.get("event_overhead_us") or _named_overhead_us(c))
            for c in record["cases"] if c["kind"] == "benchmark" and c.get("timing")}


def _named_overhead_us(case: dict[str, Any]) -> float | None:
    """The worker's overhead as the timing method names it (results written before event_overhead_us)."""
    match = re.search(r"minus ([0-9.]+) us", case["timing"]["method"])
    return float(match.group(1)) if match else None


def shape_row(clock: ReplayClock, kernel: Any, problem: str, case: dict[str, Any]) -> dict[str, Any]:
    """The replay clock's figures for one shape, or None each and a note saying why it failed."""
    try:
        reading = clock.time(kernel, shape_inputs(problem, case))
    except Exception as error:  # a file that cannot be captured or run here is reported, not fatal
        why = f"{type(error).__name__}: {str(error).splitlines()[0][:100]}"
        return {"replay_us": None, "note": f"not capturable: {why}"}
    return {"replay_us": reading.us, "replay_p10_us": reading.p10_us, "replay_p90_us": reading.p90_us,
            "replay_floor_us": reading.floor_us, "calls": reading.calls, "note": ""}


def main() -> int:
    args = sys.argv[1:]
    eval_missing = "--eval-missing" in args
    args = [a for a in args if a != "--eval-missing"]
    out = Path(args[0])
    eval_dir = Path(args[1]) if len(args) > 1 and Path(args[1]).is_dir() else None
    files = [Path(f) for f in args[2:]] or default_files()
    clock, rows = ReplayClock(), []
    floors = {**asdict(clock.floors()), "empty_kernel_us": clock.floors().empty_kernel_us}
    out.with_name(f"{out.stem}_floors.json").write_text(json.dumps(floors, indent=2))
    print("replay clock floors: " + ", ".join(f"{k} {v:.2f}" for k, v in floors.items()), flush=True)
    for path in files:
        problem = path.parent.name
        medians = harness_medians(path, eval_dir, eval_missing)
        try:
            kernel = load_shipped(path)
        except Exception as error:  # e.g. a library this machine lacks
            kernel, why = None, f"not loadable: {type(error).__name__}: {str(error).splitlines()[0][:100]}"
        for case in load_task(problem).benchmarks:
            figures = shape_row(clock, kernel, problem, case) if kernel else {"replay_us": None, "note": why}
            harness_us, overhead_us = medians.get(shape_text(case), (None, None))
            row = {"file": f"{problem}/{path.name}", "shape": shape_text(case), "harness_us": harness_us,
                   "harness_overhead_us": overhead_us, **figures}
            row["ratio"] = harness_us / row["replay_us"] if harness_us and row["replay_us"] else None
            row["harness_in_band"] = in_band(harness_us, row["replay_us"], *HARNESS_BAND)
            rows.append(row)
            print(f"{row['file']} {row['shape']}: replay {_us(row['replay_us'])} us (p10-p90 "
                  f"{_us(row.get('replay_p10_us'))}-{_us(row.get('replay_p90_us'))}, "
                  f"floor {_us(row.get('replay_floor_us'))}), harness {_us(harness_us)} us, "
                  f"in band {row['harness_in_band']} {row['note']}", flush=True)
    out.write_text(json.dumps(rows, indent=2))
    judged = [r for r in rows if r["harness_in_band"] is not None]
    print(f"fidelity: {sum(r['harness_in_band'] for r in judged)} of {len(judged)} rows with both clocks inside "
          f"max({100 * HARNESS_BAND[0]:.0f}%, {HARNESS_BAND[1]} us); {len(rows) - len(judged)} rows lack one")
    print("\n".join(additivity_lines(additivity(rows, ("harness_us", "replay_us")))))
    return 0


def _us(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


if __name__ == "__main__":
    sys.exit(main())
