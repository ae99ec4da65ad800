"""A hang ends at its stage's limit, the run with it, with the worker's Python stacks taken before it was killed."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.contract.results import ExitCode, Status
from harness.judge.run import evaluate_submission
from harness.judge.verdict.modes import MODES
from harness.judge.worker_link import worker_process, worker_spawn

sys.path.insert(0, str(Path(__file__).resolve().parent / "adversarial"))
from adversarial_suite import reduced_problem  # the suite's cut-down task folders

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
    first, *rest = record["cases"]
    assert first["status"] == "timeout"
    # The run stops at the first limit (it once waited out a second one before fail-fast stopped it).
    assert rest and all(c["status"] == "not_run" and "hung until its time limit" in c["reason"] for c in rest)
    assert record["elapsed_s"] < 2 * 120 * 0.08
    assert f"it was at fault_hang_in_call.py:{HANGING_LINE} in custom_kernel" in first["reason"]
    assert f'fault_hang_in_call.py", line {HANGING_LINE} in custom_kernel' in first["traceback"]
    assert "most recent call first" in first["traceback"]  # faulthandler's dump, every thread
    assert f'fault_hang_in_call.py", line {HANGING_LINE}' in run.stdout  # --verbose prints it


def test_the_watchdog_names_the_line_when_sigusr1_never_arrives(monkeypatch, tmp_path):
    """A CUDA worker on the H100 never answered SIGUSR1 (docs/results.md run 10): the worker's
    faulthandler watchdog, armed with each request's limit, writes the stacks without any signal."""
    real_kill = os.kill
    monkeypatch.setattr(worker_process.os, "kill", lambda pid, number: None if number == signal.SIGUSR1
                        else real_kill(pid, number))
    problem = reduced_problem("nvfp4_gemv", tmp_path, {"test": 3.0})  # a short test limit, the import's generous
    result = evaluate_submission(str(problem), HANG, MODES["test"], "cpu")
    first = result.cases[0]
    assert first.status == Status.TIMEOUT
    assert f"it was at fault_hang_in_call.py:{HANGING_LINE} in custom_kernel" in first.reason
    assert first.traceback.startswith("Timeout (")  # the watchdog's dump, not the signal's


def test_without_any_dump_the_report_says_how_the_workers_threads_stood():
    """The last route needs nothing from the worker: its threads' states and SIGUSR1's fate, from /proc."""
    sleeper = subprocess.Popen([sys.executable, "-c", f"import time  # {worker_spawn.WORKER_MODULE}\ntime.sleep(60)"])
    try:
        time.sleep(0.5)
        text = worker_process.thread_states(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert text.startswith("the worker's threads: thread ") and "SIGUSR1" in text and "waits in" in text


def test_a_hang_in_the_harness_wait_says_the_kernel_never_finished(tmp_path):
    """A kernel that spins after custom_kernel returned hangs the core's own wait (no frame of the
    submission's file): the reason says so instead of naming only the harness's line."""
    from harness.judge.worker_link.hang_report import hung_at

    submission = tmp_path / "submission.py"
    submission.write_text("")
    waiting = ('Thread 0x1 (most recent call first):\n'
               '  File "/x/harness/worker/sealed_core.py", line 83 in time_call\n'
               '  File "/x/harness/worker/serve_loop.py", line 167 in _sealed_call\n')
    assert hung_at(waiting, submission) == ("; it was at sealed_core.py:83 in time_call (the harness waiting for "
                                            "the GPU: a kernel custom_kernel launched never finished)")
    inside = f'  File "{submission}", line 7 in custom_kernel\n' + waiting
    assert hung_at(inside, submission) == "; it was at submission.py:7 in custom_kernel"
