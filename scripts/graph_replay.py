"""The fidelity table: every shipped baseline and ladder rung by graph replay beside the harness (GPU only).

Files: every ``submissions/*/triton_*.py`` (the ladder's rungs included) and every problem's vendor
file (task.yml ``vendor``: the cuBLAS files), unless named. For each benchmark shape, graph replay
under the reading flush (harness.sol.replay_clock) beside the harness's median from EVAL_JSON_DIR
(``{problem}__{file}.json``, as ``harness eval --json`` writes them); with ``--eval-missing``, a
file without one is run through ``harness eval --mode benchmark`` first. Each row gets its verdict:
the harness within max(3%, 0.2 us) of replay (issue 38's band). Files that cannot be captured in a
graph (they allocate or synchronise) or do not run on this GPU are reported as such.

A second column times the same flushed calls with an event pair each, queued back to back behind
one long sleep (raw: no overhead subtracted); beside the harness's raw time (its median plus the
event overhead it subtracted) it separates what an event pair costs from what an idle GPU costs.

    python3 scripts/graph_replay.py OUT.json [EVAL_JSON_DIR [--eval-missing] [FILE ...]]
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.contract.task_spec import list_problems, load_task, shape_text
from harness.sol.replay_clock import ROUNDS, load_shipped, reading_flush, replay_us, shape_inputs

BAND_RELATIVE, BAND_FLOOR_US = 0.03, 0.2
QUEUE_SLEEP_CYCLES = 20_000_000
"""About 10 ms of torch.cuda._sleep: longer than the host takes to queue ROUNDS x POOL calls."""


def in_band(measured: float | None, reference: float | None, relative: float, floor_us: float) -> bool | None:
    """Within max(relative, floor) of the reference; None when either is missing."""
    if not measured or not reference:
        return None
    return abs(measured - reference) <= max(relative * reference, floor_us)


def default_files() -> list[Path]:
    """Every Triton baseline (the ladder's included) and every problem's vendor (cuBLAS) file."""
    vendors = [Path(os.path.relpath(task.vendor.file)) for task in map(load_task, list_problems()) if task.vendor]
    return sorted(Path("submissions").glob("*/triton_*.py")) + sorted(vendors)


def queued_events_us(kernel: Callable[[Any], Any], inputs: list[Any], flush: Callable[[], None]) -> float:
    """Median raw event time of flushed calls queued back to back behind one long sleep."""
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(ROUNDS * len(inputs))]
    torch.cuda.synchronize()
    torch.cuda._sleep(QUEUE_SLEEP_CYCLES)
    for (start, end), data in zip(pairs, inputs * ROUNDS):
        flush()
        start.record()
        kernel(data)
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) * 1e3 for start, end in pairs)


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


def shape_row(kernel: Callable[[Any], Any], problem: str, case: dict[str, Any],
              flush: Callable[[], None]) -> tuple[float | None, float | None, str]:
    """(graph replay us, raw queued events us, note); a figure that failed is None and the note says why."""
    try:
        inputs = shape_inputs(problem, case)
        graph = replay_us(kernel, inputs, flush)
    except Exception as error:  # a file that cannot be captured or run here is reported, not fatal
        return None, None, f"not capturable: {type(error).__name__}: {str(error).splitlines()[0][:100]}"
    try:
        return graph, queued_events_us(kernel, inputs, flush), ""
    except Exception as error:  # the graph figure stands on its own
        return graph, None, f"queued events failed: {type(error).__name__}: {str(error).splitlines()[0][:100]}"


def main() -> int:
    args = sys.argv[1:]
    eval_missing = "--eval-missing" in args
    args = [a for a in args if a != "--eval-missing"]
    out = Path(args[0])
    eval_dir = Path(args[1]) if len(args) > 1 and Path(args[1]).is_dir() else None
    files = [Path(f) for f in args[2:]] or default_files()
    flush, rows = reading_flush(), []
    for path in files:
        problem = path.parent.name
        medians = harness_medians(path, eval_dir, eval_missing)
        try:
            kernel = load_shipped(path)
        except Exception as error:  # e.g. a library this machine lacks
            kernel, why = None, f"not loadable: {type(error).__name__}: {str(error).splitlines()[0][:100]}"
        for case in load_task(problem).benchmarks:
            graph, queued, note = shape_row(kernel, problem, case, flush) if kernel else (None, None, why)
            harness_us, overhead_us = medians.get(shape_text(case), (None, None))
            verdict = in_band(harness_us, graph, BAND_RELATIVE, BAND_FLOOR_US)
            rows.append({"file": f"{problem}/{path.name}", "shape": shape_text(case), "graph_us": graph,
                         "queued_events_raw_us": queued, "harness_us": harness_us,
                         "harness_raw_us": harness_us + overhead_us if harness_us and overhead_us else None,
                         "ratio": harness_us / graph if harness_us and graph else None,
                         "harness_in_band": verdict, "note": note})
            print(f"{problem}/{path.name} {shape_text(case)}: graph {graph and round(graph, 2)} us, harness "
                  f"{harness_us and round(harness_us, 2)} us, in band {verdict}; raw queued events "
                  f"{queued and round(queued, 2)} us {note}", flush=True)
    out.write_text(json.dumps(rows, indent=2))
    judged = [r for r in rows if r["harness_in_band"] is not None]
    print(f"fidelity: {sum(r['harness_in_band'] for r in judged)} of {len(judged)} rows with both clocks inside "
          f"max({100 * BAND_RELATIVE:.0f}%, {BAND_FLOOR_US} us); {len(rows) - len(judged)} rows lack one")
    return 0


if __name__ == "__main__":
    sys.exit(main())
