"""The fidelity table: every shipped baseline and ladder rung by graph replay beside the harness (GPU only).

Files: every ``submissions/*/triton_*.py`` (the ladder's rungs included, and the ladder launched twice
per call: the two-kernel row) and every problem's vendor file (task.yml ``vendor``: the cuBLAS files),
unless named. For each benchmark shape, the replay clock (harness.sol.replay_clock: each flushed call
timed inside one CUDA graph by %globaltimer stamps, the reference clock) beside the harness's median
from EVAL_JSON_DIR (``{problem}__{file}.json``, as ``harness eval --json`` writes them); with
``--eval-missing``, a file without one is run through ``harness eval --mode benchmark`` first. Each row
gets its verdict: the harness within max(3%, 0.2 us) of replay (issue 38's band). Beside it, the stream
replay (the same clock's groups queued eagerly on one stream behind a hold, as the harness runs a call),
**aligned**: less what it charges an empty kernel beyond the graph's (the alignment, measured on both
clocks' floors, printed with them and kept in ``_floors.json``), so that a one-kernel call reads as by
the graph and each further kernel adds the stream's cost of a launch (``stream_us``, its spread and
floor, ``stream_raw_us`` before the alignment, and ``harness_in_band_stream`` in the same band). A
stream pays about 1 us more per launch than a graph; the harness, timing a call on a stream, charges
every launch after the first at the stream's price, so on calls of several kernels only the aligned
stream replay is its yardstick. Files that cannot be captured in a graph (they allocate or synchronise)
or do not run on this GPU are reported as such (``note``; the stream replay's failures in
``stream_note``). The graph clock's floors (its stamps with nothing and with an empty kernel between
them) are printed first and written to OUT's ``_floors.json`` (scripts/ncu_times.py holds ncu's empty
kernel against them), the stream replay's printed beside them; the second-launch lines
(scripts/clock_checks.py) close the output.

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

from clock_checks import (  # this folder's decisions
    HARNESS_BAND,
    acceptance_line,
    additivity,
    additivity_lines,
    band_count,
    in_band,
)

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


CLOCKS = {"replay": ("note", "not capturable"), "stream": ("stream_note", "not timed on a stream")}
"""Each clock's key prefix: (the row's key for why it failed, what the failure is called)."""


def shape_row(clocks: dict[str, ReplayClock], kernel: Any, problem: str, case: dict[str, Any],
              alignment_us: dict[str, float]) -> dict[str, Any]:
    """Each clock's figures for one shape (keys prefixed by its name in CLOCKS), less its ``alignment_us``
    (its raw median kept as ``{name}_raw_us``), or None and a note saying why it failed."""
    inputs, row = None, {}
    for name, clock in clocks.items():
        note, failure = CLOCKS[name]
        try:
            inputs = shape_inputs(problem, case) if inputs is None else inputs
            reading = clock.time(kernel, inputs)
        except Exception as error:  # a file that cannot be captured or run here is reported, not fatal
            row |= {f"{name}_us": None, note: f"{failure}: {type(error).__name__}: {str(error).splitlines()[0][:100]}"}
            continue
        shift = alignment_us.get(name, 0.0)
        row |= {f"{name}_us": reading.us - shift, f"{name}_p10_us": reading.p10_us - shift,
                f"{name}_p90_us": reading.p90_us - shift, f"{name}_floor_us": reading.floor_us, note: "",
                f"{name}_median_us": reading.median_us - shift if reading.median_us is not None else None}
        if shift:
            row[f"{name}_raw_us"] = reading.us
        row.setdefault("calls", reading.calls)
    return row


def main() -> int:
    args = sys.argv[1:]
    eval_missing = "--eval-missing" in args
    args = [a for a in args if a != "--eval-missing"]
    out = Path(args[0])
    eval_dir = Path(args[1]) if len(args) > 1 and Path(args[1]).is_dir() else None
    files = [Path(f) for f in args[2:]] or default_files()
    clock, rows = ReplayClock(), []
    clocks = {"replay": clock, "stream": ReplayClock(clock.flush, stream=True)}
    floors = {**asdict(clock.floors()), "empty_kernel_us": clock.floors().empty_kernel_us}
    print("replay clock floors: " + ", ".join(f"{k} {v:.2f}" for k, v in floors.items()), flush=True)
    streamed = clocks["stream"].floors()
    alignment = {"stream": streamed.empty_kernel_us - floors["empty_kernel_us"]}
    kept = {**floors, "stream_alignment_us": alignment["stream"]}
    out.with_name(f"{out.stem}_floors.json").write_text(json.dumps(kept, indent=2))
    print(f"stream replay floors: nothing_us {streamed.nothing_us:.2f}, empty_us {streamed.empty_us:.2f}, "
          f"empty_kernel_us {streamed.empty_kernel_us:.2f}; aligned to the graph's one-kernel charge: "
          f"{alignment['stream']:.2f} us off every stream reading", flush=True)
    for path in files:
        problem = path.parent.name
        medians = harness_medians(path, eval_dir, eval_missing)
        try:
            kernel = load_shipped(path)
        except Exception as error:  # e.g. a library this machine lacks
            kernel, why = None, f"not loadable: {type(error).__name__}: {str(error).splitlines()[0][:100]}"
        for case in load_task(problem).benchmarks:
            figures = (shape_row(clocks, kernel, problem, case, alignment) if kernel
                       else {"replay_us": None, "stream_us": None, "note": why, "stream_note": why})
            harness_us, overhead_us = medians.get(shape_text(case), (None, None))
            row = {"file": f"{problem}/{path.name}", "shape": shape_text(case), "harness_us": harness_us,
                   "harness_overhead_us": overhead_us, **figures}
            row["ratio"] = harness_us / row["replay_us"] if harness_us and row["replay_us"] else None
            row["harness_in_band"] = in_band(harness_us, row["replay_us"], *HARNESS_BAND)
            row["harness_in_band_stream"] = in_band(harness_us, row["stream_us"], *HARNESS_BAND)
            rows.append(row)
            print(f"{row['file']} {row['shape']}: {_clock(row, 'replay')}, {_clock(row, 'stream')}, harness "
                  f"{_us(harness_us)} us, in band {row['harness_in_band']} (stream {row['harness_in_band_stream']}) "
                  f"{row['note']} {row['stream_note']}".rstrip(), flush=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"fidelity: {_count(rows, 'harness_in_band', 'graph replay')}; "
          f"{_count(rows, 'harness_in_band_stream', 'stream replay')}")
    print(acceptance_line(rows, "harness_in_band", "harness ~ graph replay"))
    print("\n".join(additivity_lines(additivity(rows, ("harness_us", "replay_us", "stream_us")))))
    return 0


def _count(rows: list[dict[str, Any]], key: str, clock: str) -> str:
    """How many rows with both figures have the harness inside the band of this clock."""
    missing = sum(row.get(key) is None for row in rows)
    return (f"{band_count(rows, key)} rows with the harness and the {clock} inside max("
            f"{100 * HARNESS_BAND[0]:.0f}%, {HARNESS_BAND[1]} us) ({missing} rows lack one)")


def _clock(row: dict[str, Any], name: str) -> str:
    """One clock's figures on the row's line: the reading, its median, its p10-p90 and the floor it took off."""
    return (f"{name} {_us(row.get(f'{name}_us'))} us (median {_us(row.get(f'{name}_median_us'))}, p10-p90 "
            f"{_us(row.get(f'{name}_p10_us'))}-"
            f"{_us(row.get(f'{name}_p90_us'))}, floor {_us(row.get(f'{name}_floor_us'))})")


def _us(value: float | None) -> str:
    return f"{value:.2f}" if value is not None else "-"


if __name__ == "__main__":
    sys.exit(main())
