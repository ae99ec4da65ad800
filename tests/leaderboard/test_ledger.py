"""The ledger and the run keys: a job's result stored once whatever happens, a stopped run resumed
with only its missing entries run, the pages listing every entry once (ranked, listed or not run)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from harness.contract.results import Status
from harness.execution.eval_job import HarnessFailure
from harness.judge import run
from harness.leaderboard import ledger, render, runner
from harness.leaderboard.rank import build_board, with_run_state
from harness.leaderboard.store import Store

from .samples import B200, FakeEvaluate, make_run


def _tree(root, names):
    folder = root / "submissions" / "nvfp4_gemv"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_text(f"#!POPCORN author {name[0]}\ndef custom_kernel(data):\n    return '{name}'\n")
    return runner.discover(root / "submissions", ["nvfp4_gemv"])


def test_a_run_key_stores_one_run_however_often_it_is_added(tmp_path):
    with Store.open(tmp_path / "lb.db") as store:
        meta = {"problem": "nvfp4_gemv", "submission_path": "a.py", "sha256": "s", "author": "a", "device_name": B200}
        first = store.add(make_run(), **meta, run_key="leaderboard/1/x")
        assert store.add(make_run((1.0, 1.0, 1.0)), **meta, run_key="leaderboard/1/x") == first
        store.add(make_run(), **meta)  # no key: an old-style run, stored as before
        assert len(store.runs()) == 2
        with pytest.raises(sqlite3.IntegrityError):  # the schema itself refuses a second run under a key
            store.connection.execute("UPDATE runs SET run_key = 'leaderboard/1/x' WHERE run_key IS NULL")


def test_a_stopped_run_lists_its_entries_and_the_next_command_runs_only_those(tmp_path, monkeypatch):
    subs = _tree(tmp_path, ["a.py", "b.py", "c.py"])
    stop = threading.Event()

    def evaluate(**options):
        stop.set()  # the organizer's Ctrl-C during the first evaluation
        return make_run((10.0, 10.0, 10.0))

    first = FakeEvaluate({name: evaluate for name in ("a.py", "b.py", "c.py")})
    monkeypatch.setattr(run, "evaluate_submission", first)
    with Store.open(tmp_path / "lb.db") as store:
        scope = runner.scope_of(subs, B200, force=True)
        ledger_run, resumed = ledger.begin(store.connection, scope)
        outcomes = runner.run_all(subs, store, device="cuda", device_name=B200, force=True, progress=print,
                                  ledger_run=ledger_run, stop=stop)
        assert not resumed and len(outcomes) == 1 and len(first.calls) == 1
        missing = ledger.not_run(store.connection, ledger_run)
        assert len(missing) == 2
        board = with_run_state(build_board("nvfp4_gemv", store.runs("nvfp4_gemv"), B200), missing, [])
        listed = [e.stored.submission_path for e in board.ranking] + [p.submission_path for p in board.not_run]
        assert sorted(path.rsplit("/", 1)[-1] for path in listed) == ["a.py", "b.py", "c.py"]
        assert render.board_json(board, "now")["not_run"][0]["status"] == "not_run"
        assert "## Not run" in render.render_markdown(board, "now")

        again = FakeEvaluate({name: make_run((10.0, 10.0, 10.0)) for name in ("a.py", "b.py", "c.py")})
        monkeypatch.setattr(run, "evaluate_submission", again)
        assert ledger.begin(store.connection, scope) == (ledger_run, True)
        outcomes = runner.run_all(subs, store, device="cuda", device_name=B200, force=True, progress=print,
                                  ledger_run=ledger_run)
        assert len(outcomes) == 3 and len(again.calls) == 2  # only the two not run
        assert ledger.not_run(store.connection, ledger_run) == [] and len(store.runs()) == 3
        assert ledger.begin(store.connection, scope)[1] is False  # finished: the next command starts afresh


def test_a_result_stored_but_not_linked_before_a_crash_is_linked_on_resume(tmp_path):
    subs = _tree(tmp_path, ["a.py"])
    with Store.open(tmp_path / "lb.db") as store:
        ledger_run, _ = ledger.begin(store.connection, runner.scope_of(subs, B200, force=False))
        planned = ledger.Planned("nvfp4_gemv", subs[0].stored_path, subs[0].sha256, "a")
        key = ledger.entry_key(ledger_run, planned)
        ledger.plan(store.connection, ledger_run, [planned])
        store.add(make_run(), problem="nvfp4_gemv", submission_path=planned.submission_path, sha256=planned.sha256,
                  author="a", device_name=B200, run_key=key)  # ... and the organizer died here
        [entry] = ledger.plan(store.connection, ledger_run, [planned]).values()
        assert entry.done and ledger.not_run(store.connection, ledger_run) == []


def test_a_harness_failure_is_listed_as_not_run_and_run_again(tmp_path, monkeypatch):
    subs = _tree(tmp_path, ["a.py"])
    monkeypatch.setattr(run, "evaluate_submission", FakeEvaluate({"a.py": RuntimeError("evaluator bug")}))
    with Store.open(tmp_path / "lb.db") as store:
        ledger_run, _ = ledger.begin(store.connection, runner.scope_of(subs, B200, force=False))
        [outcome] = runner.run_all(subs, store, device="cuda", device_name=B200, progress=print,
                                   ledger_run=ledger_run)
        assert isinstance(outcome.result, HarnessFailure)
        board = build_board("nvfp4_gemv", store.runs("nvfp4_gemv"), B200)
        assert not board.failed and [p.submission_path for p in board.not_run] == [subs[0].stored_path]
        fixed = FakeEvaluate({"a.py": make_run((10.0, 10.0, 10.0))})
        monkeypatch.setattr(run, "evaluate_submission", fixed)
        [outcome] = runner.run_all(subs, store, device="cuda", device_name=B200, progress=print)
        assert len(fixed.calls) == 1 and outcome.result.status == Status.PASSED
        board = build_board("nvfp4_gemv", store.runs("nvfp4_gemv"), B200)
        assert len(board.ranking) == 1 and not board.not_run
