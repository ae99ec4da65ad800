"""Issue 38's launch-path probe (scripts/launch_path_probe.py): its graph-launched ladder, on the CPU.

The probe's verdict comes from the device, its copy and summary from scripts/ladder_rungs.py (tested
beside it); what the CPU can hold here is that the probe times the ladder's rungs the summary knows, and
that the graph-launched file loads the shipped ladder's launch and passes the ladder's check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import launch_path_probe as probe

ROOT = Path(__file__).resolve().parents[1]


def test_the_probe_times_two_files_on_rungs_the_shipped_ladder_has():
    shipped = yaml.safe_load((ROOT / "problems" / "timing_ladder" / "task.yml").read_text())["benchmarks"]
    assert set(probe.RUNGS) <= {(case["n"], case["iters"]) for case in shipped}
    assert all(path.is_file() for path in probe.FILES.values()) and len(set(probe.FILES.values())) == 2


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
assert module._LADDER.__file__.endswith("submissions/timing_ladder/triton_ladder.py")  # the shipped launch itself
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
