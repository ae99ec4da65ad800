"""scripts/two_gpu_report.py's phase table: each leaderboard run's wall_s phases summed over its jobs (issue 35)."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("two_gpu_report", REPO / "scripts" / "two_gpu_report.py")
report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report)


def _db(path: Path, jobs: dict[str, list[dict[str, float]]]) -> Path:
    """A store with the tables the report reads: ledger run -> its jobs' elapsed_s and wall_s."""
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE leaderboard_runs (id INTEGER PRIMARY KEY)")
        connection.execute("CREATE TABLE runs (run_key TEXT, elapsed_s REAL, result_json TEXT)")
        for ledger_run, walls in jobs.items():
            connection.execute("INSERT INTO leaderboard_runs (id) VALUES (?)", (int(ledger_run),))
            for index, wall in enumerate(walls):
                connection.execute("INSERT INTO runs VALUES (?, ?, ?)", (f"leaderboard/{ledger_run}/{index}",
                                   sum(wall.get(p, 0.0) for p in report.PHASES), json.dumps({"wall_s": wall})))
    return path


def test_each_phase_is_summed_over_the_last_runs_jobs(tmp_path):
    db = _db(tmp_path / "lb.db", {
        "1": [{"tests": 100.0}],  # an earlier leaderboard run: not counted
        "2": [{"worker_start": 5.2, "tests": 4.5, "timed": 2.0, "supervisor": 0.7, "supervisor_notifications": 9000},
              {"worker_start": 0.5, "tests": 5.5, "timed": 2.0, "worker_head_start": 3.0}],
    })
    timeline = {"workers": {"gpu0": {"busy_s": 12.0}, "gpu1": {"busy_s": 9.0}}}
    split = report.phases_of(db, timeline)
    assert split["jobs"] == 2 and split["elapsed_s"] == 19.7
    assert split["phases_s"] == {"worker_start": 5.7, "tests": 10.0, "timed": 4.0, "worker_head_start": 3.0,
                                 "supervisor": 0.7, "supervisor_notifications": 9000}
    assert split["outside_evaluator_s"] == 1.3  # 21 s busy against 19.7 s in the evaluator
    assert report.phases_of(tmp_path / "missing.db", timeline) is None


def test_the_table_has_one_column_per_phase_any_run_has(tmp_path):
    serial = report.phases_of(_db(tmp_path / "a.db", {"1": [{"tests": 4.0, "timed": 2.0}]}), None)
    cluster = report.phases_of(_db(tmp_path / "b.db", {"1": [{"tests": 5.0, "vendor": 0.4}]}), None)
    lines = report.phase_table([{"run": "1 GPU", "phases": serial}, {"run": "2 GPUs", "phases": cluster},
                                {"run": "killed", "phases": None}])
    assert lines[2] == "| run | jobs | evaluator | tests | timed | vendor | busy beyond |"
    assert lines[4:] == ["| 1 GPU | 1 | 6.0 | 4.0 | 2.0 | - | - |", "| 2 GPUs | 1 | 5.4 | 5.0 | - | 0.4 | - |"]
    assert report.phase_table([{"run": "1 GPU", "phases": None}]) == []


def test_only_the_runs_a_call_made_get_rows(tmp_path):
    """A call of other steps (the service alone) leaves no empty leaderboard rows, no 'killed: ?'."""
    (tmp_path / "scaling").mkdir()
    (tmp_path / "scaling" / "cluster_scaling.json").write_text(json.dumps({"walls_s": {"serial_1gpu": 10.0}}))
    text = report.markdown(report.leaderboard_rows(tmp_path), [])
    assert "| 1 GPU, serial | 10.0 |" in text
    assert "--cluster local" not in text and "killed" not in text and "| service |" not in text
    assert report.markdown(report.leaderboard_rows(tmp_path / "nothing"), []).strip() == ""
