"""Issue 38's launch-path probe (scripts/launch_path_probe.py) and its graph-launched ladder, on the CPU.

The probe's verdict comes from the device; what the CPU can hold is that its ladder copy keeps only the
rungs it names and is readable by the workers' uid, that each run's figures and the spread across
processes are read as the docs say, and that the graph-launched file passes the ladder's check.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import launch_path_probe as probe

ROOT = Path(__file__).resolve().parents[1]


def test_the_ladder_copy_keeps_only_the_probes_rungs_readable_by_every_uid(tmp_path):
    copy = probe.ladder_copy(tmp_path)
    spec = yaml.safe_load((copy / "task.yml").read_text())
    assert [(case["n"], case["iters"]) for case in spec["benchmarks"]] == list(probe.RUNGS)
    assert spec["tests"] == yaml.safe_load((ROOT / "problems" / "timing_ladder" / "task.yml").read_text())["tests"]
    for path in [tmp_path, copy, copy / "task.yml", copy / "reference.py"]:
        assert path.stat().st_mode & stat.S_IROTH, path  # the worker runs as uid 65534


def _case(n: int, median_us: float, overhead_us: float | None) -> dict:
    return {"kind": "benchmark", "case": {"n": n, "iters": 1, "seed": 5}, "timing": {"median_us": median_us},
            "event_overhead_us": overhead_us, "second_clock_us": 7.68 if overhead_us else None}


def test_a_runs_figures_and_the_spread_across_processes():
    runs = [probe.case_figures({"cases": [{"kind": "test", "case": {"n": 1024}}, _case(65536, median, overhead)]})
            for median, overhead in ((1.70, 2.13), (1.60, 2.23), (1.90, 2.33))]
    assert runs[0] == {"n=65536 iters=1": {"median_us": 1.70, "overhead_us": 2.13, "second_clock_us": 7.68}}
    figures = probe.spread([*runs, {}], "n=65536 iters=1")  # a process that gave no median is left out
    assert figures["medians_us"] == [1.70, 1.60, 1.90]
    assert figures["sd_us"] == pytest.approx(0.1528, abs=1e-4) and figures["overhead_sd_us"] == pytest.approx(0.1)
    assert probe.spread_text("stream launch", figures) == "stream launch 1.600-1.900 us, sd 0.153"
    assert probe.spread_text("graph launch", probe.spread(runs[:1], "n=65536 iters=1")) == \
        "graph launch 1.700 us (one process)"
    assert probe.spread_text("graph launch", probe.spread([{}], "n=65536 iters=1")) == "graph launch: no median"


def test_the_graph_launched_ladder_passes_the_ladders_check_on_the_cpu():
    """Under Triton's interpreter (a subprocess: TRITON_INTERPRET must be set before triton is imported)."""
    script = """
import importlib.util, json
from harness.contract.task_spec import load_task
from harness.worker import contest_modules
from problems.timing_ladder import reference
contest_modules.install(reference, load_task("timing_ladder").task_py)  # `task` importable, as the worker does
spec = importlib.util.spec_from_file_location("graph_launched_ladder", "scripts/graph_launched_ladder.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
custom_kernel = module.custom_kernel
results = []
for case in ({"n": 1024, "iters": 1}, {"n": 4096, "iters": 9}):
    data = reference.generate_input(**case, seed=3, device="cpu")
    results.append(reference.check_implementation(data, custom_kernel(data))[0])
print(json.dumps(results))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, True]
