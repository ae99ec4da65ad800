"""An independent time for every shipped baseline, to hold the harness's medians against (GPU only).

For each benchmark shape: POOL input sets are drawn (fresh inputs, as the harness gives), then
one CUDA graph replays ROUNDS x [zero a 2x-L2 buffer, custom_kernel(inputs_i)], and a second graph
replays the flushes alone. Per call: (first - second) / calls. Nothing of the harness's timer,
worker or core is used, so an error in them cannot hide here. Files that cannot be captured in a
graph (they allocate or synchronise) are reported as such.

    python3 scripts/graph_replay.py OUT.json [EVAL_JSON_DIR]

With EVAL_JSON_DIR (the `harness eval --json` files of the same baselines), each shape's ratio
harness median / graph replay is printed too (goal: within 3%).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path

import torch
from timing_validation import graph_per_call_us  # this folder's script: one graph-replay method

from harness import contest_modules
from harness.task import load_task, shape_text

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


def per_call_us(kernel, problem: str, case: dict) -> float:
    reference = importlib.import_module(f"problems.{problem}.reference")
    inputs = [reference.generate_input(**{**case, "seed": case["seed"] + i}, device="cuda") for i in range(POOL)]
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")

    def flushed_call(data: object) -> None:
        flush.zero_()
        kernel(data)

    calls = [lambda data=data: flushed_call(data) for _ in range(ROUNDS) for data in inputs]
    flushes = [flush.zero_] * len(calls)
    return graph_per_call_us(calls, REPLAYS) - graph_per_call_us(flushes, REPLAYS)


def main() -> int:
    out = Path(sys.argv[1])
    eval_dir = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    rows = []
    for path in sorted(Path("submissions").glob("*/triton_*.py")):
        problem = path.parent.name
        kernel = load(path)
        medians = {}
        if eval_dir and (eval_dir / f"{problem}__{path.stem}.json").is_file():
            record = json.loads((eval_dir / f"{problem}__{path.stem}.json").read_text())
            medians = {shape_text(c["case"]): c["timing"]["median_us"] for c in record["cases"]
                       if c["kind"] == "benchmark" and c.get("timing")}
        for case in load_task(problem).benchmarks:
            try:
                graph = per_call_us(kernel, problem, case)
            except Exception as error:  # a file that cannot be captured is reported, not fatal
                graph, note = None, f"not capturable: {type(error).__name__}: {str(error).splitlines()[0][:100]}"
            else:
                note = ""
            harness_us = medians.get(shape_text(case))
            ratio = harness_us / graph if harness_us and graph else None
            rows.append({"file": f"{problem}/{path.name}", "shape": shape_text(case), "graph_us": graph,
                         "harness_us": harness_us, "ratio": ratio, "note": note})
            print(f"{problem}/{path.name} {shape_text(case)}: graph {graph and round(graph, 2)} us, "
                  f"harness {harness_us and round(harness_us, 2)} us, ratio {ratio and round(ratio, 3)} {note}",
                  flush=True)
    out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
