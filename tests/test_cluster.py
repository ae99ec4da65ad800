"""The Dask executor on a local CPU cluster, through the real evaluator: the same verdicts as the
serial run, a killed Dask worker's job retried once elsewhere, a second death stored as a
harness failure, nothing lost and nothing stored twice."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from harness.contract.results import Status
from harness.execution import dask_executor
from harness.execution.dask_executor import open_executor
from harness.execution.eval_job import HarnessFailure
from harness.leaderboard import runner
from harness.leaderboard.store import Store

REPO = Path(__file__).resolve().parents[1]
ADVERSARIAL = REPO / "tests" / "adversarial" / "submissions"
SLOW_IMPORT_S = 8  # long enough to find the job's worker and kill it while it runs


PROBLEM = "nvfp4_gemm"  # its CPU cases are the quickest (a file in about 10 s)


def _tree(root: Path, files: dict[str, str | Path]) -> Path:
    folder = root / "submissions" / PROBLEM
    folder.mkdir(parents=True)
    for name, content in files.items():
        if isinstance(content, Path):
            shutil.copy(content, folder / name)
        else:
            (folder / name).write_text(content)
    return root / "submissions"


def _run(submissions: Path, db: Path, executor=None, lines=None):
    found = runner.discover(submissions, [PROBLEM])
    with Store.open(db) as store:
        outcomes = runner.run_all(found, store, device="cpu", device_name="cpu", secret_seed=99,
                                  executor=executor, progress=(lines.append if lines is not None else print))
        return outcomes, store.runs()


def test_cluster_gives_the_serial_verdicts(tmp_path):
    """A shipped baseline, a shipped fault and broken files: status and reason agree with the serial run."""
    submissions = _tree(tmp_path, {
        "torch_reference.py": REPO / "submissions" / PROBLEM / "torch_reference.py",
        "fault_sys_exit.py": ADVERSARIAL / "fault_sys_exit.py",
        "syntax.py": "def custom_kernel(data)\n",
        "wrong.py": "def custom_kernel(data):\n    return None\n",
    })
    serial, _ = _run(submissions, tmp_path / "serial.db")
    executor = open_executor("local", device="cpu")
    try:
        assert executor.device_name == "cpu" and executor.worker_names is None
        on_cluster, stored = _run(submissions, tmp_path / "dask_executor.db", executor)
    finally:
        executor.close()
    verdicts = [(o.submission.path.name, o.result.status, o.result.reason) for o in serial]
    assert verdicts == [(o.submission.path.name, o.result.status, o.result.reason) for o in on_cluster]
    assert [status for _, status, _ in verdicts] == [Status.CRASHED, Status.BAD_INPUT, Status.PASSED, Status.FAILED]
    assert verdicts[1][2].startswith("syntax.py: syntax error at line 1")  # no private job folder in it
    assert len(stored) == 4 and not any(run.harness_error for run in stored)


def _kill_worker_running(executor, job_name: str, not_before: set[int]) -> int:
    """SIGKILL the Dask worker process that runs the job named job_name; return its pid."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for address, keys in executor.client.processing().items():
            if any(job_name in str(key) for key in keys):
                try:
                    pid = executor.client.run(os.getpid, workers=[address])[address]
                except Exception:  # a worker still listed while it goes away: look again
                    continue
                if pid not in not_before:
                    time.sleep(2)  # into the evaluation (the job sleeps at import for SLOW_IMPORT_S)
                    os.kill(pid, signal.SIGKILL)
                    return pid
        time.sleep(0.2)
    raise AssertionError(f"{job_name} never ran on a new worker")


def _run_killing(tmp_path, kills: int, with_other_job: bool = True):
    baseline = (REPO / "submissions" / PROBLEM / "torch_reference.py").read_text()
    slow = f"import time\n\ntime.sleep({SLOW_IMPORT_S})\n{baseline}"  # a correct file, slow to import
    files = {"slow.py": slow, "wrong.py": "def custom_kernel(data):\n    return None\n"}
    submissions = _tree(tmp_path, files if with_other_job else {"slow.py": slow})
    lines: list[str] = []
    executor = open_executor("local", progress=lines.append, device="cpu")
    killed: set[int] = set()

    def killer() -> None:
        for _ in range(kills):
            killed.add(_kill_worker_running(executor, "slow.py", killed))

    thread = threading.Thread(target=killer)
    thread.start()
    try:
        outcomes, stored = _run(submissions, tmp_path / "lb.db", executor, lines)
    finally:
        thread.join()
        executor.close()
    assert len(killed) == kills
    return {o.submission.path.name: o for o in outcomes}, stored, lines


def test_a_killed_worker_is_retried_once_elsewhere(tmp_path):
    outcomes, stored, lines = _run_killing(tmp_path, kills=1)
    slow = outcomes["slow.py"].result
    assert slow.status == Status.PASSED and not isinstance(slow, HarnessFailure)  # its own verdict, on retry
    assert sorted(run.submission_path.rsplit("/", 1)[-1] for run in stored) == ["slow.py", "wrong.py"]
    assert sum("slow.py: started" in line for line in lines) == 2  # once, then once more


def test_a_second_death_is_stored_as_a_harness_failure(tmp_path):
    # One job only: the killer must find it and nothing else on the workers it kills.
    outcomes, stored, _ = _run_killing(tmp_path, kills=2, with_other_job=False)
    slow = outcomes["slow.py"]
    assert slow.harness_error and slow.result.status == Status.CRASHED
    assert f"its Dask worker died {dask_executor.ALLOWED_FAILURES + 1} times" in slow.result.reason
    assert [(run.submission_path.rsplit("/", 1)[-1], run.harness_error) for run in stored] == [("slow.py", True)]


def test_bad_cluster_addresses_are_one_line(monkeypatch):
    with pytest.raises(dask_executor.ClusterError, match="expected 'local' or a scheduler address"):
        open_executor("localhost:8786")
    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT_S", 2)
    with pytest.raises(dask_executor.ClusterError, match="no Dask scheduler answered"):
        open_executor("tcp://127.0.0.1:9")


def test_workers_of_another_model_are_left_out():
    lines: list[str] = []
    chosen, model = dask_executor.choose_workers({"a-gpu0": "NVIDIA H200", "a-gpu1": "NVIDIA H200",
                                            "b-gpu0": "NVIDIA H100"}, lines.append)
    assert (chosen, model) == (["a-gpu0", "a-gpu1"], "NVIDIA H200")
    assert lines == ["note: running on the 2 worker(s) with NVIDIA H200 only; left out: 1x NVIDIA H100 "
                     "(timings from different models never rank together)"]
    assert dask_executor.choose_workers({"x": "cpu", "y": "cpu"}, lines.append) == (None, "cpu") and len(lines) == 1
