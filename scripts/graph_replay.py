"""An independent time for every shipped baseline, to hold the harness's medians against (GPU only).

For each benchmark shape: POOL input sets are drawn (fresh inputs, as the harness gives), then
one CUDA graph replays ROUNDS x [read a 2x-L2 buffer, custom_kernel(inputs_i)], and a second graph
replays the flushes alone. The flush reads, as the core's does since 2026-11-26: a zeroing flush
leaves dirty lines whose write-back lands in the timed kernel (docs/timing.md, "The flush decided
by measurement"). Per call: (first - second) / calls. Nothing of the harness's timer,
worker or core is used, so an error in them cannot hide here. Files that cannot be captured in a
graph (they allocate or synchronise) are reported as such.

A second column times the same flushed calls with an event pair each, all queued behind one
long sleep so that the GPU runs them back to back, busy throughout (raw: no overhead
subtracted). Set beside the harness's raw time (its median plus the event overhead it
subtracted), it separates what an event pair costs from what an idle GPU between timed calls
costs.

    python3 scripts/graph_replay.py OUT.json [EVAL_JSON_DIR [FILE ...]]   (default: every triton_*.py)

With EVAL_JSON_DIR (the `harness eval --json` files of the same baselines), each shape's ratio
harness median / graph replay is printed too (goal: within 3%).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from timing_validation import graph_per_call_us  # this folder's script: one graph-replay method

from harness.contract.task_spec import load_task, shape_text
from harness.worker import contest_modules

POOL = 4
ROUNDS = 8
REPLAYS = 7


def load(path: Path):
    """The file's custom_kernel, imported beside the contest modules it expects (task, utils, ...)."""
    problem = importlib.import_module(f"problems.{path.parent.name}.reference")
    contest_modules.install(problem, load_task(path.parent.name).task_py)
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"baseline_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel


def per_call_us(kernel, problem: str, case: dict) -> tuple[float, float | None, str]:
    """(graph replay per call, median raw queued event time, note) in us; the second is None, and
    the note says why, when only the queued-event timing failed (the graph figure is kept)."""
    reference = importlib.import_module(f"problems.{problem}.reference")
    inputs = [reference.generate_input(**{**case, "seed": case["seed"] + i}, device="cuda") for i in range(POOL)]
    flush = reading_flush()

    def flushed_call(data: object) -> None:
        flush()
        kernel(data)

    calls = [lambda data=data: flushed_call(data) for _ in range(ROUNDS) for data in inputs]
    flushes = [flush] * len(calls)
    graph_us = graph_per_call_us(calls, REPLAYS) - graph_per_call_us(flushes, REPLAYS)
    try:
        return graph_us, queued_events_us(kernel, inputs, flush), ""
    except Exception as error:  # the graph figure stands on its own
        return graph_us, None, f"queued events failed: {type(error).__name__}: {str(error).splitlines()[0][:100]}"


QUEUE_SLEEP_CYCLES = 20_000_000
"""About 10 ms of torch.cuda._sleep: longer than the host takes to queue ROUNDS x POOL calls."""


def reading_flush() -> Callable[[], None]:
    """Empties the L2 of earlier lines by reading a buffer twice its size: clean lines only."""
    buffer = torch.zeros(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    total = torch.zeros((), dtype=torch.int64, device="cuda")
    return lambda: torch.sum(buffer, dim=0, dtype=torch.int64, out=total)


def queued_events_us(kernel, inputs: list, flush: Callable[[], None]) -> float:
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


def subtracted_overhead_us(record: dict) -> float | None:
    """The event overhead the harness subtracted, as its timing method names it."""
    match = re.search(r"minus ([0-9.]+) us", next((c["timing"]["method"] for c in record["cases"]
                                                   if c.get("timing")), ""))
    return float(match.group(1)) if match else None


def main() -> int:
    out = Path(sys.argv[1])
    eval_dir = Path(sys.argv[2]) if len(sys.argv) > 2 and Path(sys.argv[2]).is_dir() else None
    rows = []
    files = [Path(f) for f in sys.argv[3:]] or sorted(Path("submissions").glob("*/triton_*.py"))
    for path in files:
        problem = path.parent.name
        kernel = load(path)
        medians, overhead_us = {}, None
        if eval_dir and (eval_dir / f"{problem}__{path.stem}.json").is_file():
            record = json.loads((eval_dir / f"{problem}__{path.stem}.json").read_text())
            medians = {shape_text(c["case"]): c["timing"]["median_us"] for c in record["cases"]
                       if c["kind"] == "benchmark" and c.get("timing")}
            overhead_us = subtracted_overhead_us(record)
        for case in load_task(problem).benchmarks:
            try:
                graph, queued, note = per_call_us(kernel, problem, case)
            except Exception as error:  # a file that cannot be captured is reported, not fatal
                graph = queued = None
                note = f"not capturable: {type(error).__name__}: {str(error).splitlines()[0][:100]}"
            harness_us = medians.get(shape_text(case))
            ratio = harness_us / graph if harness_us and graph else None
            harness_raw = harness_us + overhead_us if harness_us and overhead_us is not None else None
            rows.append({"file": f"{problem}/{path.name}", "shape": shape_text(case), "graph_us": graph,
                         "queued_events_raw_us": queued, "harness_us": harness_us, "harness_raw_us": harness_raw,
                         "ratio": ratio, "note": note})
            print(f"{problem}/{path.name} {shape_text(case)}: graph {graph and round(graph, 2)} us, "
                  f"harness {harness_us and round(harness_us, 2)} us, ratio {ratio and round(ratio, 3)}; raw: "
                  f"queued events {queued and round(queued, 2)} us, harness {harness_raw and round(harness_raw, 2)} "
                  f"us {note}", flush=True)
    out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
