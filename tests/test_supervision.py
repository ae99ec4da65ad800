"""The parent's end of the syscall supervisor: reading its record, and what a run makes of it."""

import json
import os
import shutil
from pathlib import Path

import pytest

from harness.contract import syscall_rules as rules
from harness.judge.run import evaluate_submission
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions
from harness.judge.worker_link import supervision, worker_confinement, worker_spawn

REPO = Path(__file__).resolve().parent.parent
HONEST = REPO / "tests" / "adversarial" / "submissions" / "x00_honest_torch.py"


def fed(*states, wanted=True) -> supervision.Supervision:
    """A Supervision whose report pipe already holds these records (no supervisor behind it)."""
    made = supervision.Supervision(False)
    made.why_off = None if wanted else made.why_off
    made.report_r, write = os.pipe()
    os.set_blocking(made.report_r, False)
    for state in states:
        os.write(write, rules.report_line("state", **state))
    os.close(write)
    return made


def test_the_first_rejecting_refusal_names_the_run_s_rejection():
    record = {"state": "armed", "refused": {"wx": 2, "proc_mem": 1, "ptrace": 1},
              "details": {"wx": "mmap R|W|X", "proc_mem": "open of '/proc/self/mem'", "ptrace": "ptrace"}}
    watched = fed({"state": "armed"}, record)
    assert watched.violation() == ("the syscall supervisor refused open of '/proc/self/mem' (rule 'proc_mem': "
                                   "no open of /proc/<pid>/mem, pagemap or map_files)")
    assert watched.quiet_refusals() == {"wx": (2, "mmap R|W|X")}
    assert "rule 'wx'" in supervision.refusal_note(watched.quiet_refusals())
    assert fed({"state": "armed", "refused": {"wx": 1}, "details": {"wx": "x"}}).violation() is None


def test_the_sandbox_line_lists_every_rule_or_says_why_it_is_off():
    armed = fed({"state": "armed", "rules": list(rules.RULE_NAMES), "notifications": 7, "handled_ms": 3.0})
    assert armed.not_armed() is None
    line = armed.sandbox_line()
    assert all(f"{name} on" in line for name in rules.RULE_NAMES)
    assert armed.counts() == (7, 0.003)
    assert "another CPU" not in line
    slow = fed({"state": "armed", "rules": list(rules.RULE_NAMES), "sync_wake": False})
    assert slow.not_armed() is None
    assert slow.sandbox_line().endswith("(answers wake the worker on another CPU: Linux 6.6 hands them over on one)")
    off = fed({"state": "off", "why": "seccomp(SECCOMP_SET_MODE_FILTER) refused: Invalid argument"})
    assert "Invalid argument" in off.not_armed() and off.sandbox_line().startswith("off (seccomp")
    assert supervision.Supervision(False).sandbox_line().startswith("off (not chosen")


def test_a_supervisor_that_never_speaks_is_not_armed(monkeypatch):
    monkeypatch.setattr(supervision, "ARM_WAIT_S", 0.2)
    assert fed().not_armed() == "the syscall supervisor did not arm: no word from it"
    assert fed({"state": "failed", "why": "KeyError"}).fault().startswith("the syscall supervisor failed (KeyError)")


def test_a_record_cut_in_two_is_read_whole():
    watched = fed(wanted=True)
    line = rules.report_line("state", state="armed", unlocks=3)
    watched._pending = line[:10]
    read, write = os.pipe()
    watched.report_r = read
    os.set_blocking(read, False)
    os.write(write, line[10:])
    assert watched.unlocks() == 3
    os.close(write)
    assert json.loads(line)["unlocks"] == 3


def test_ranked_mode_is_refused_without_the_supervisor(monkeypatch):
    steps = worker_confinement.DEFAULT_STEPS - {"syscalls"}
    monkeypatch.setenv(worker_confinement.STEPS_ENV, ",".join(steps))
    result = evaluate_submission("nvfp4_gemv", HONEST, MODES["leaderboard"], "cuda", RunOptions(secret_seed=7))
    assert result.status.value == "bad_input"
    assert result.reason.startswith("ranked mode refused: the sandbox step 'syscalls' is off")


def test_a_ranked_gpu_run_refuses_a_worker_that_would_keep_root(monkeypatch):
    """Root reads every process's /proc files (the evaluator's open descriptors among them): a root
    evaluator's worker must drop to uid 65534, which needs the interpreter and the code readable."""
    monkeypatch.setattr(supervision, "ranked_refusal", lambda: None)
    monkeypatch.setattr(worker_spawn.os, "geteuid", lambda: 0)
    blocked = (Path("/opt/python/bin/python3"), Path("/opt/python"))
    monkeypatch.setattr(worker_spawn, "unreachable_code", lambda submission=None: blocked)
    result = evaluate_submission("nvfp4_gemv", HONEST, MODES["leaderboard"], "cuda", RunOptions(secret_seed=7))
    assert result.status.value == "bad_input"
    assert result.reason.startswith("ranked mode refused: a worker would run as root: uid 65534 cannot reach "
                                    "/opt/python/bin/python3 (stopped at /opt/python)")
    monkeypatch.setenv(worker_confinement.STEPS_ENV, ",".join(worker_confinement.DEFAULT_STEPS - {"uid"}))
    assert worker_spawn.kept_root(HONEST).startswith("the sandbox step 'uid' is off")
    monkeypatch.delenv(worker_confinement.STEPS_ENV)
    monkeypatch.setattr(worker_spawn, "unreachable_code", lambda submission=None: None)
    assert worker_spawn.kept_root(HONEST) is None


@pytest.mark.skipif(supervision.unavailable() is not None, reason=f"{supervision.unavailable()}")
def test_an_honest_run_reports_every_rule_and_the_supervisor_s_cost():
    notes = []
    result = evaluate_submission("nvfp4_gemv", HONEST, MODES["test"], "cpu", progress=notes.append)
    assert result.status.value == "passed", result.reason
    sandbox = next(note for note in notes if note.startswith("sandbox:"))
    assert all(f"{name} on" in sandbox for name in rules.RULE_NAMES)
    assert result.wall_s["supervisor_notifications"] > 0 and result.wall_s["supervisor"] > 0


def test_a_problem_the_workers_cannot_read_is_one_line_naming_the_fix(tmp_path, monkeypatch):
    """Under a root evaluator the workers are uid 65534: a problem in a private folder is bad input before
    any worker starts, not a crash 'during import of the submission' in every one of them."""
    private = tmp_path / "private"
    shutil.copytree(REPO / "problems" / "nvfp4_gemv", private / "nvfp4_gemv")
    private.chmod(0o700)
    monkeypatch.setattr(worker_spawn, "unprivileged_uid", lambda submission=None: 65534)
    result = evaluate_submission(str(private / "nvfp4_gemv"), HONEST, MODES["test"], "cpu")
    assert result.status.value == "bad_input" and not result.cases
    assert result.reason.startswith("the workers run as uid 65534 and cannot read ")
    assert "task.py (stopped at " in result.reason and "chmod o+rx" in result.reason
    # A worker that keeps the evaluator's uid (its file unreadable by 65534 too, outside ranked mode) reads it.
    monkeypatch.setattr(worker_spawn, "unprivileged_uid", lambda submission=None: None)
    assert worker_spawn.unreadable_problem(private / "nvfp4_gemv" / "task.py", HONEST) is None
    monkeypatch.setattr(worker_spawn, "unprivileged_uid", lambda submission=None: 65534)
    assert worker_spawn.unreadable_problem(Path("/nonexistent-nvfp4/task.py"), HONEST) is None  # no traceback
    monkeypatch.setattr(worker_spawn.worker_confinement, "blocked_at", lambda path: None)
    assert worker_spawn.unreadable_problem(private / "nvfp4_gemv" / "task.py", HONEST) is None
