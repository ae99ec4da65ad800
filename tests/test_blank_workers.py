"""Blank workers: started before the parent's heavy imports, each handed exactly one file, the rest killed."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.execution import eval_job
from harness.execution.eval_job import EvalJob
from harness.judge.worker_link import blank_workers, worker_spawn
from harness.judge.worker_link.blank_workers import Shelf
from harness.judge.worker_link.worker_process import WorkerProcess
from harness.judge.worker_link.worker_spawn import WorkerSpec
from tests.user_paths import without_user_settings

REPO = Path(__file__).resolve().parent.parent

BEFORE_TORCH = textwrap.dedent("""
    import json, sys
    from harness.judge.worker_link import blank_workers
    blank_workers.prestart_for_command(["eval", "x.py", "--device", "cpu", "--mode=test"])
    [blank] = blank_workers.SHELF.waiting()
    seen = {"torch_in_parent": "torch" in sys.modules, "worker_running": blank.process.poll() is None}
    import torch  # the parent's heavy import, now beside the worker's
    print(json.dumps(seen))
    print(blank.process.pid)  # never taken: killed when this process exits
""")


def _gone(pid: int, wait_s: float = 30.0) -> bool:
    """Whether process ``pid`` has ended (waiting up to ``wait_s`` for its exit to be reaped)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_the_eval_command_starts_its_worker_before_the_parent_imports_torch():
    run = subprocess.run([sys.executable, "-c", BEFORE_TORCH], capture_output=True, text=True, cwd=REPO,
                         timeout=120, env=without_user_settings())
    assert run.returncode == 0, run.stderr
    seen, pid = run.stdout.splitlines()
    assert json.loads(seen) == {"torch_in_parent": False, "worker_running": True}
    assert _gone(int(pid))


def test_the_command_line_is_read_only_as_far_as_the_worker_needs():
    shelf_specs = []

    class Recorder(Shelf):
        def put(self, spec, warm=False):
            shelf_specs.append((spec, warm))

    recorder = Recorder()
    original, blank_workers.SHELF = blank_workers.SHELF, recorder
    try:
        for argv in (["eval", "f.py", "--device", "cuda"], ["eval", "p", "f.py", "--device=cpu"],
                     ["eval", "f.py", "--mode", "sanitize"], ["eval", "--help"], ["leaderboard", "--device", "cuda"],
                     ["leaderboard", "--device", "cuda", "--cluster", "local"], ["leaderboard", "--help"],
                     ["serve"], []):
            blank_workers.prestart_for_command(argv)
    finally:
        blank_workers.SHELF = original
    assert shelf_specs == [(WorkerSpec("cuda"), True), (WorkerSpec("cpu"), False), (WorkerSpec("cuda"), True)]


@pytest.fixture
def shelf(monkeypatch):
    """A shelf of this test's own, its workers killed at the end whatever happened."""
    own = Shelf()
    monkeypatch.setattr(blank_workers, "SHELF", own)
    spawned = []
    real_spawn = worker_spawn.spawn

    def spawn(*args, **kwargs):
        spawned.append(real_spawn(*args, **kwargs))
        return spawned[-1]

    monkeypatch.setattr(worker_spawn, "spawn", spawn)
    yield own, spawned
    own.discard()
    for worker in spawned:
        if worker.process.poll() is None:
            worker.kill()


def test_a_blank_worker_is_handed_exactly_one_file_and_the_one_left_over_is_killed(shelf, tmp_path):
    own, spawned = shelf
    own.ahead = True  # files in a row (run_job): each worker taken is replaced by a blank one
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    workers = [WorkerProcess(path, "cpu", None, []) for path in (first, second, second)]
    workers[0].spawn()
    assert [w.process for w in own.waiting()] == [spawned[1].process]  # the next file's, started at once
    workers[1].spawn()
    assert workers[1].spawned is spawned[1] and own.handed == 1
    workers[2].spawn()  # a fresh worker for the same file again (after a crash, say) takes the next blank
    pids = [w.process.pid for w in workers]
    assert len(set(pids)) == 3 and own.handed == 2
    assert all(w.spawned is not blank for w in workers for blank in own.waiting())
    left_over = own.waiting()[0]
    for worker in workers:
        worker.close()
    own.discard()
    assert left_over.process.poll() is not None and own.waiting() == []


def test_a_blank_worker_that_does_not_fit_the_file_is_killed_not_handed(shelf, tmp_path):
    own, _ = shelf
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(worker_spawn.worker_confinement, "chosen_steps", lambda: frozenset({"uid"}))
        own.put(WorkerSpec("cpu"))
        blank = own.waiting()[0]
        assert blank.drop_to_uid is None
        # This file would let the worker drop to uid 65534; the blank one was started without dropping.
        patch.setattr(worker_spawn, "unprivileged_uid", lambda submission=None: 65534)
        assert own.take(WorkerSpec("cpu"), tmp_path / "a.py") is None
        assert blank.process.poll() is not None
    own.put(WorkerSpec("cpu"))
    blank = own.waiting()[0]
    with pytest.MonkeyPatch.context() as patch:  # other sandbox steps chosen since it started
        patch.setattr(worker_spawn.worker_confinement, "chosen_steps", lambda: frozenset({"landlock"}))
        assert own.take(WorkerSpec("cpu"), tmp_path / "a.py") is None
        assert blank.process.poll() is not None
    own.put(WorkerSpec("cpu"))
    assert own.take(WorkerSpec("cuda"), tmp_path / "a.py") is None  # another device: not handed, still waiting
    assert own.take(WorkerSpec("cpu", command_prefix=("compute-sanitizer",)), tmp_path / "a.py") is None
    assert len(own.waiting()) == 1 and own.handed == 0


def test_run_job_keeps_a_blank_worker_ahead_and_the_serial_executor_kills_it(monkeypatch):
    from harness.execution.serial_executor import SerialExecutor
    from harness.judge import run

    own = Shelf()
    monkeypatch.setattr(blank_workers, "SHELF", own)
    discarded = []
    monkeypatch.setattr(own, "discard", lambda: discarded.append(True))
    seen = []
    monkeypatch.setattr(run, "evaluate_submission", lambda *a, **k: seen.append(own.ahead) or (_ for _ in ()).throw(
        RuntimeError("stop here")))
    executor = SerialExecutor()
    executor.submit(EvalJob(key="k", problem="nvfp4_gemv", filename="s.py", source=b"", cache_owner="user\0bob"))
    [(_, result)] = executor.completed(timeout_s=60)
    executor.close()
    assert seen == [True] and isinstance(result, eval_job.HarnessFailure) and discarded == [True]


def test_a_crashed_blank_worker_is_not_handed(shelf, tmp_path):
    own, _ = shelf
    own.put(WorkerSpec("cpu"))
    blank = own.waiting()[0]
    os.kill(blank.process.pid, signal.SIGTERM)  # the reaper ends the worker with itself
    blank.process.wait()
    assert own.take(WorkerSpec("cpu"), tmp_path / "a.py") is None and own.handed == 0


def test_a_blank_worker_another_submission_stopped_is_killed_not_handed(shelf, tmp_path):
    """The file running now is the same uid as the blank worker waiting for the next one: a SIGSTOP
    from it must not hang the next author's run."""
    own, _ = shelf
    own.put(WorkerSpec("cpu"))
    blank = own.waiting()[0]
    deadline = time.monotonic() + 30
    while not (children := Path(f"/proc/{blank.process.pid}/task/{blank.process.pid}/children").read_text().split()):
        assert time.monotonic() < deadline, "the reaper never started its worker"
        time.sleep(0.05)
    os.kill(int(children[0]), signal.SIGSTOP)
    while not blank_workers.stopped_below(blank.process.pid):
        assert time.monotonic() < deadline, "the worker never read as stopped"
        time.sleep(0.05)
    assert own.take(WorkerSpec("cpu"), tmp_path / "a.py") is None and own.handed == 0
    assert blank.process.poll() is not None  # killed, with everything below it


def test_the_eval_commands_worker_comes_off_the_shelf(tmp_path):
    """`python -m harness eval`: the worker that imports the file is the one started before the
    parent's imports (its head start is booked apart from the wall time's phases)."""
    submission = tmp_path / "broken.py"
    submission.write_text("raise ImportError('no such kernel')\n")
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, "-m", "harness", "eval", "nvfp4_gemv", str(submission), "--device", "cpu",
                          "--mode", "test", "--json", str(out), "--no-history"], capture_output=True, text=True,
                         cwd=REPO, timeout=300, env=without_user_settings())
    assert run.returncode != 0 and out.exists(), run.stderr
    wall = json.loads(out.read_text())["wall_s"]
    assert wall["worker_head_start"] > 0 and "worker_start" in wall


def test_the_eval_commands_worker_reports_when_its_first_line_ran(tmp_path):
    """``worker_entry``: from the worker's spawn to its first line (the reaper's and its own interpreter's
    starts), which comes before everything the worker did ahead and the parent's wait for it."""
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, "-m", "harness", "eval", "nvfp4_gemv",
                          str(REPO / "submissions" / "nvfp4_gemv" / "torch_reference.py"), "--device", "cpu",
                          "--mode", "test", "--json", str(out), "--no-history"], capture_output=True, text=True,
                         cwd=REPO, timeout=300, env=without_user_settings())
    assert run.returncode == 0, run.stderr
    wall = json.loads(out.read_text())["wall_s"]
    assert 0 < wall["worker_entry"] < wall["worker_head_start"] + wall["worker_start"]


def test_the_wall_line_books_the_head_start_apart_from_the_phases():
    from harness.contract.results import RunResult, Status
    from harness.display import report

    run = RunResult("nvfp4_gemv", "s.py", "", "test", {"type": "cpu"}, "0", status=Status.PASSED,
                    wall_s={"start": 1.0, "worker_start": 0.2, "worker_head_start": 3.0, "tests": 1.0})
    text = report.render(run, verbose=True)
    assert "Wall time 2.2 s: start and imports 1.0, worker start 0.2 (after 3.0 started ahead, not counted)" in text
