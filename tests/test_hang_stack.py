"""A hang ends at its stage's limit with the worker's Python stacks, taken before it was killed."""

import json
import subprocess
import sys
from pathlib import Path

from harness.contract.results import ExitCode

REPO = Path(__file__).resolve().parent.parent
HANG = REPO / "tests/adversarial/submissions/fault_hang_in_call.py"
HANGING_LINE = 7  # threading.Event().wait() in custom_kernel


def test_a_timeout_names_the_hanging_line_and_keeps_every_threads_stack(tmp_path):
    out = tmp_path / "hang.json"
    run = subprocess.run(
        [sys.executable, "-m", "harness", "eval", "nvfp4_gemv", str(HANG), "--mode", "test", "--device", "cpu",
         "--timeout-scale", "0.08", "--json", str(out), "--verbose"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )
    assert run.returncode == ExitCode.TIMEOUT, run.stdout + run.stderr
    record = json.loads(out.read_text())
    first = record["cases"][0]
    assert first["status"] == "timeout"
    assert f"it was at fault_hang_in_call.py:{HANGING_LINE} in custom_kernel" in first["reason"]
    assert f'fault_hang_in_call.py", line {HANGING_LINE} in custom_kernel' in first["traceback"]
    assert "most recent call first" in first["traceback"]  # faulthandler's dump, every thread
    assert f'fault_hang_in_call.py", line {HANGING_LINE}' in run.stdout  # --verbose prints it
