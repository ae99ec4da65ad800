"""Faults on a real Dask cluster of CPU workers, through the real evaluator: Dask workers killed
mid-run, the scheduler restarted, the organizer's Ctrl-C. Every entry ends ranked or listed exactly
once (or listed as not run), nothing is stored twice, and a rerun runs only what is missing."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
from distributed import Client

from harness.contract.results import Status
from harness.execution.dask_executor import open_executor
from harness.leaderboard import runner
from harness.leaderboard.store import Store

REPO = Path(__file__).resolve().parents[1]
PROBLEM = "nvfp4_gemm"  # its CPU cases are the quickest
BASELINE = (REPO / "submissions" / PROBLEM / "torch_reference.py").read_text()
SLOW_ENV = "T35_SLOW_IMPORT_S"  # the evaluator passes the environment on to the submission's worker
SLOW = f"import os\nimport time\n\ntime.sleep(float(os.environ.get('{SLOW_ENV}', '0')))\n{BASELINE}"
SELF_KILL = "import os\nimport signal\n\n\ndef custom_kernel(data):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
WRONG = "def custom_kernel(data):\n    return None\n"


def _tree(root: Path, files: dict[str, str]) -> Path:
    folder = root / "submissions" / PROBLEM
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return root / "submissions"


def _leaderboard(submissions: Path, db: Path, out: Path, slow_s: float) -> subprocess.Popen:
    """The command in its own process group, as a terminal runs it (Ctrl-C reaches the whole group)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("NVFP4_")}, SLOW_ENV: str(slow_s),
           "NVFP4_SECRET_SEED": "99", "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "harness", "leaderboard", "--problem", PROBLEM, "--cluster", "local",
                             "--device", "cpu", "--submissions", str(submissions), "--db", str(db), "--out", str(out)],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            process_group=0)


def _wait_for_lines(process: subprocess.Popen, needles: list[str], lines: list[str], timeout_s: float = 60) -> None:
    """Read the command's stderr until every needle was seen, in any order (a worker's forwarded
    line may come after the next file's result)."""
    missing = set(needles)
    deadline = time.monotonic() + timeout_s
    while missing and time.monotonic() < deadline:
        line = process.stderr.readline()
        assert line or process.poll() is None, f"the command ended before {missing}: {''.join(lines)}"
        lines.append(line)
        missing = {needle for needle in missing if needle not in line}
    assert not missing, f"no {missing} in {timeout_s} s: {''.join(lines)}"


def _finish(process: subprocess.Popen, lines: list[str]) -> str:
    _, err = process.communicate(timeout=120)
    return "".join(lines) + err


def _page_files(out: Path) -> dict[str, list[str]]:
    """Each file on the problem's leaderboard.json and the lists it is in (one, for a correct page)."""
    board = json.loads((out / PROBLEM / "leaderboard.json").read_text())
    found: dict[str, list[str]] = {}
    for kind in ("ranking", "others", "not_rankable", "failed", "not_run"):
        for entry in board[kind]:
            found.setdefault(entry["file"], []).append(kind)
    return found


def _keyed_runs(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT run_key, COUNT(*) FROM runs WHERE run_key IS NOT NULL "
                                  "GROUP BY run_key").fetchall()


def _evaluating_worker(leaderboard: subprocess.Popen) -> psutil.Process:
    """The local cluster's Dask worker process that is evaluating a file: the one with the most
    submission workers below it (the file's own and the blank one started ahead for its next file;
    an idle Dask worker keeps only its blank one)."""
    children = psutil.Process(leaderboard.pid).children()
    workers = [child for child in children if "spawn_main" in " ".join(child.cmdline())]
    below = {w: sum("worker.boot" in " ".join(c.cmdline()) for c in w.children(recursive=True)) for w in workers}
    assert len(workers) == 2 and len(set(below.values())) == 2, below
    return max(workers, key=below.__getitem__)


def test_a_killed_dask_worker_and_a_killed_submission_worker_leave_every_entry_once(tmp_path):
    """The Dask worker running c_slow.py SIGKILLed mid-evaluation (its Nanny restarts it, the job is
    run once more); a submission whose own worker is SIGKILLed mid-call gets that verdict, once."""
    submissions = _tree(tmp_path, {"a_self_kill.py": SELF_KILL, "b_wrong.py": WRONG, "c_slow.py": SLOW})
    db, out, lines = tmp_path / "lb.db", tmp_path / "site", []
    process = _leaderboard(submissions, db, out, slow_s=6)
    _wait_for_lines(process, ["c_slow.py: started", "[2/3]"], lines)  # a and b went first, one on each worker
    time.sleep(1)  # into c's evaluation: its worker sleeps at the file's import
    _evaluating_worker(process).send_signal(signal.SIGKILL)
    log = _finish(process, lines)

    assert process.returncode == 0, log
    assert log.count("c_slow.py: started") == 2  # once, then once more
    assert _page_files(out) == {"a_self_kill.py": ["failed"], "b_wrong.py": ["failed"], "c_slow.py": ["not_rankable"]}
    assert sorted(count for _, count in _keyed_runs(db)) == [1, 1, 1]
    with Store.open(db) as store:
        verdicts = {run.submission_path.rsplit("/", 1)[-1]: run.result.status for run in store.runs()}
    assert verdicts == {"a_self_kill.py": Status.CRASHED, "b_wrong.py": Status.FAILED, "c_slow.py": Status.PASSED}


def test_ctrl_c_lists_what_did_not_run_and_the_rerun_runs_only_that(tmp_path):
    submissions = _tree(tmp_path, {"a_quick.py": BASELINE, "b_slow.py": SLOW, "c_slow.py": SLOW + "# another file\n"})
    db, out, lines = tmp_path / "lb.db", tmp_path / "site", []
    process = _leaderboard(submissions, db, out, slow_s=120)
    _wait_for_lines(process, ["[1/3]"], lines)  # a is stored; both workers now sleep in b and c
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the command and its cluster's workers get it
    log = _finish(process, lines)
    assert process.returncode == 130, log
    assert "2 file(s) not run (listed on the pages)" in log
    assert _page_files(out) == {"a_quick.py": ["not_rankable"], "b_slow.py": ["not_run"], "c_slow.py": ["not_run"]}

    again = _leaderboard(submissions, db, out, slow_s=0)
    log = _finish(again, [])
    assert again.returncode == 0, log
    assert "resuming leaderboard run 1" in log
    assert log.count("... done before the stop:") == 1 and log.count(": started") == 2  # only b and c ran
    assert _page_files(out) == {"a_quick.py": ["not_rankable"], "b_slow.py": ["not_rankable"],
                                "c_slow.py": ["not_rankable"]}
    assert sorted(count for _, count in _keyed_runs(db)) == [1, 1, 1]


def _supervised_worker(address: str, name: str, log: Path) -> subprocess.Popen:
    """A dask worker restarted whenever it exits, as a process supervisor would (a worker ends
    itself when it loses its scheduler). No Nanny: the supervisor restarts it, and without one
    the worker leaves in 1 s instead of 7 (what the client does is the same)."""
    command = (f"while true; do {sys.executable} -m distributed.cli.dask_worker {address} --nthreads 1 "
               f"--resources GPU=1 --name {name} --no-dashboard --no-nanny; sleep 0.2; done")
    return subprocess.Popen(["bash", "-c", command], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=log.open("a"), stderr=subprocess.STDOUT, start_new_session=True)


def _scheduler(port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                             str(port), "--no-dashboard"], stdout=log.open("a"), stderr=subprocess.STDOUT)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_restarted_scheduler_loses_no_entry_and_stores_none_twice(tmp_path, monkeypatch):
    """A joined scheduler killed while both jobs run and started again on its port: the client
    reconnects, the workers (under a supervisor) join again, both jobs are sent again and stored once."""
    monkeypatch.setenv(SLOW_ENV, "2")
    port, logs = _free_port(), tmp_path / "cluster.log"
    address = f"tcp://127.0.0.1:{port}"
    schedulers = [_scheduler(port, logs)]
    workers = [_supervised_worker(address, f"w{index}", logs) for index in range(2)]
    lines: list[str] = []

    def restart_scheduler_mid_run() -> None:
        while sum(": started" in line for line in lines) < 2:
            time.sleep(0.1)
        time.sleep(1.5)  # into both evaluations
        schedulers[0].kill()
        schedulers[0].wait()
        schedulers.append(_scheduler(port, logs))

    try:
        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        executor = open_executor(address, progress=lines.append, device="cpu")
        submissions = _tree(tmp_path, {"one.py": SLOW, "two.py": SLOW})
        killer = threading.Thread(target=restart_scheduler_mid_run, daemon=True)
        killer.start()
        with Store.open(tmp_path / "lb.db") as store:
            outcomes = runner.run_all(runner.discover(submissions, [PROBLEM]), store, device="cpu", device_name="cpu",
                                      secret_seed=99, executor=executor, progress=lines.append)
            stored = store.runs()
        executor.close()
    finally:
        for process in schedulers:
            process.kill()
        for worker in workers:
            os.killpg(worker.pid, signal.SIGKILL)
    text = "\n".join(lines)
    assert len(schedulers) == 2 and text.count("its Dask task was lost with the scheduler; sent again") == 2, text
    assert [(o.submission.path.name, o.result.status, o.harness_error) for o in outcomes] == [
        ("one.py", Status.PASSED, False), ("two.py", Status.PASSED, False)]
    assert sorted(run.submission_path.rsplit("/", 1)[-1] for run in stored) == ["one.py", "two.py"]
    assert [count for _, count in _keyed_runs(tmp_path / "lb.db")] == [1, 1]
