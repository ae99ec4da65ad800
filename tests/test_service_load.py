"""scripts/service_load.py's accounting (issue 35's service test): each submission answered once,
twice or never, the restart's re-queued runs apart from extra ones, and the throughputs with and
without the restart's gap, from what a load run left."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def load():
    spec = importlib.util.spec_from_file_location("service_load", REPO / "scripts" / "service_load.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def _row(start_s: int, end_s: int, attempts: int = 1) -> tuple[str, bool, int, str, str]:
    return ("done", True, attempts, f"2026-11-26T03:00:{start_s:02d}+00:00", f"2026-11-26T03:00:{end_s:02d}+00:00")


def test_a_clean_run_is_every_submission_answered_once(load):
    outcome = load.Outcome(codes=[0, 0, 0], reports=[1, 1, 1], rows=[_row(0, 10), _row(0, 20), _row(10, 30)],
                           log_text="", client_wall_s=40.0, gap_s=None)
    summary = load.account(outcome, expect_exit=0)
    assert (summary["answered_once"], summary["answered_twice"], summary["lost"], summary["extra_runs"]) == (3, 0, 0, 0)
    assert summary["queue_s"] == 30.0 and summary["queue_per_min"] == 6.0
    assert summary["per_min"] == 4.5 and summary["restart_gap_s"] is None


def test_the_restarts_reruns_are_not_extra_runs_and_its_gap_comes_off(load):
    """Two jobs re-queued at the restart ran twice (attempts 2): that is the restart, not a job run twice."""
    rows = [_row(0, 10), _row(12, 40, attempts=2), _row(12, 40, attempts=2), _row(40, 50)]
    outcome = load.Outcome(codes=[0] * 4, reports=[1] * 4, rows=rows, client_wall_s=60.0, gap_s=10.0,
                           log_text="... re-queued 2 job(s) a previous run of the service left running\n")
    summary = load.account(outcome, expect_exit=0)
    assert (summary["requeued_at_restart"], summary["extra_runs"], summary["attempts"]) == (2, 0, 6)
    assert summary["queue_per_min"] == 4.8 and summary["queue_per_min_without_restart"] == 6.0
    assert summary["per_min_without_restart"] == 4.8


def test_doubles_losses_and_a_wrong_exit_are_counted(load):
    rows = [_row(0, 10, attempts=2), _row(0, 10), ("queued", False, 0, None, None)]
    outcome = load.Outcome(codes=[0, 0, None, 1], reports=[2, 1, 0, 1], rows=rows, client_wall_s=30.0, gap_s=None,
                           log_text="job 1 answered twice; the second answer is dropped\n")
    summary = load.account(outcome, expect_exit=0)
    assert summary["answered_once"] == 1  # the client with exit 1 printed one report: not the expected answer
    assert summary["answered_twice"] == 2  # one client printed two reports; the dispatcher dropped one answer
    assert summary["lost"] == 2  # a client with no report, a submission never done
    assert summary["extra_runs"] == 1  # a job run twice with nothing re-queued (the never-run one offsets nothing)
    assert summary["exit_codes"] == {"0": 2, "1": 1, "None": 1}
