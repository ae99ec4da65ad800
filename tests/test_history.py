"""The per-user history: every eval kept (unless --no-history), listed, and two runs compared."""

import json
import os

import pytest

from harness.commands import eval_command
from harness.commands.compare_command import comparison_rows
from harness.commands.main import main
from harness.contract.results import CaseResult, ExitCode, RunResult, Status, TimingStats
from harness.history import run_history
from harness.history.run_history import HISTORY_ENV, History, default_path
from harness.sqlite_migrations import StoreError

SHAPES = ({"m": 7168, "k": 16384, "l": 1, "seed": 1111}, {"m": 4096, "k": 7168, "l": 8, "seed": 1111})


def _timing(median_us: float, spread: float) -> TimingStats:
    low, high = median_us * (1 - spread / 100), median_us * (1 + spread / 100)
    return TimingStats(median_us, median_us, 0.1, low, high, low, high, 20, "cuda-event")


def run_of(medians, path="my.py", status=Status.PASSED, spread=2.0) -> RunResult:
    """A run whose shapes' p10-p90 spread is +-``spread``% of their medians."""
    cases = [CaseResult("test", {"m": 128, "k": 256, "l": 1, "seed": 1}, Status.PASSED)]
    cases += [CaseResult("benchmark", dict(shape), Status.PASSED, timing=_timing(m, spread), sol_us=5.0,
                         pct_of_sol=500 / m) for shape, m in zip(SHAPES, medians)]
    geomean = (medians[0] * medians[1]) ** 0.5
    return RunResult("nvfp4_gemv", path, "ab" * 32, "benchmark", {"type": "cuda", "name": "NVIDIA H100"}, "0.1.0",
                     status=status, cases=cases, geomean_us=geomean, geomean_pct_of_sol=500 / geomean,
                     started_at="2026-01-02T03:04:05+00:00")


def test_the_history_lives_in_the_user_data_folder_unless_the_environment_says(monkeypatch, tmp_path):
    monkeypatch.setenv(HISTORY_ENV, str(tmp_path / "h.db"))
    assert default_path() == tmp_path / "h.db"
    monkeypatch.delenv(HISTORY_ENV)
    assert default_path().name == "history.db" and "nvfp4-harness" in default_path().parts


def test_runs_are_kept_listed_and_read_back(tmp_path):
    with History.open(tmp_path / "h.db") as history:
        first = history.add(run_of([20.0, 40.0]))
        second = history.add(run_of([10.0, 40.0], path="faster.py"))
        entries = history.entries()
        assert [e.id for e in entries] == [first, second] and entries[1].submission_path == "faster.py"
        assert history.previous(second, history.result(second)) == first
        assert history.result(second).cases[1].timing.median_us == 10.0
        assert history.entries("nvfp4_gemm") == []
        with pytest.raises(StoreError, match="no run 99"):
            history.result(99)


def test_eval_keeps_every_run_unless_no_history(monkeypatch, capsys):
    monkeypatch.setattr(eval_command, "evaluate_submission", lambda *a, **k: run_of([20.0, 40.0]))
    argv = ["eval", "nvfp4_gemv", "submissions/nvfp4_gemv/torch_reference.py", "--device", "cpu"]
    assert main(argv) == 0 and main(argv) == 0
    err = capsys.readouterr().err
    assert "kept as run 2 in the history" in err and "python -m harness compare 1 2" in err
    assert main([*argv, "--no-history"]) == 0
    with History.open() as history:
        assert len(history.entries()) == 2


def test_history_lists_the_runs_in_a_table(capsys):
    with History.open() as history:
        history.add(run_of([20.0, 40.0]))
        history.add(run_of([10.0, 40.0], path="faster.py", status=Status.FAILED))
    assert main(["history"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("id"))
    assert header.split() == ["id", "when", "problem", "file", "mode", "device", "status", "geomean", "%", "SOL"]
    assert "faster.py" in out and "failed" in out and "28.28 us" in out and "NVIDIA H100" in out
    assert main(["history", "nvfp4_gemm"]) == 0 and "no runs kept" in capsys.readouterr().out


def test_compare_shows_two_runs_per_shape_from_ids_and_json_files(tmp_path, capsys):
    with History.open() as history:
        history.add(run_of([20.0, 40.0]))
    result_file = tmp_path / "b.json"
    result_file.write_text(json.dumps(run_of([10.0, 44.0]).to_json()))
    assert main(["compare", "1", str(result_file)]) == 0
    out = capsys.readouterr().out
    line = next(row for row in out.splitlines() if row.startswith("benchmark m=7168 k=16384 l=1"))
    assert line.split()[-7:] == ["20.00", "19.60-20.40", "25.0", "10.00", "9.80-10.20", "50.0", "-50.0%"]
    assert "+10.0%" in next(row for row in out.splitlines() if "m=4096" in row)
    assert "geometric mean" in out and "A = run 1: my.py" in out and "B = b.json" in out
    assert "not comparable" not in out


def test_overlapping_spreads_are_within_noise_and_cpu_wall_clock_has_no_percent_of_sol():
    """Two CPU runs whose p10-p90 spreads overlap (953-55321 us): 'within noise', never '+559.8%', no % SOL."""
    a, b = run_of([1000.0, 1000.0]), run_of([6598.0, 1100.0])
    for run, (p10, p90) in ((a, (953.0, 55321.0)), (b, (1200.0, 60000.0))):
        run.device = {"type": "cpu", "name": "cpu"}
        run.cases[1].timing = TimingStats(run.cases[1].timing.median_us, 0, 0, p10, p90, p10, p90, 10, "wall clock")
    rows = {row[0]: row[1:] for row in comparison_rows(a, b)}
    assert rows["benchmark m=7168 k=16384 l=1"] == ["1000.00", "953.00-55321.00", "6598.00", "1200.00-60000.00",
                                                    "within noise"]
    assert rows["benchmark m=4096 k=7168 l=8"][-1] == "+10.0%"  # 980-1020 against 1078-1122: apart
    assert rows["geometric mean"][-1] != "within noise" and len(rows["geometric mean"]) == 5
    b.cases[2].timing = a.cases[2].timing
    assert {row[0]: row[-1] for row in comparison_rows(a, b)}["geometric mean"] == "within noise"


@pytest.mark.parametrize(("change", "words"), [
    ({"status": Status.TIMEOUT, "geomean_us": None}, "B timeout: only two passed runs compare"),
    ({"problem": "nvfp4_gemm"}, "different problems"),
    ({"device": {"type": "cpu", "name": "cpu"}}, "different devices (NVIDIA H100, cpu)"),
    ({"geomean_us": None}, "B timed nothing"),
])
def test_only_comparable_runs_are_compared_or_suggested(change, words, capsys):
    a, b = run_of([20.0, 40.0]), run_of([10.0, 44.0])
    for name, value in change.items():
        setattr(b, name, value)
    with History.open() as history:
        history.add(a)
    assert run_history.record(b).endswith("(python -m harness history)")  # no `compare 1 2` suggested
    assert main(["compare", "1", "2"]) == 0
    assert f"note: not comparable: {words}" in capsys.readouterr().out
    assert run_history.record(run_of([10.0, 44.0])).endswith("compare 1 3 shows the change)")


def test_comparison_rows_name_a_shape_only_one_run_has():
    a, b = run_of([20.0, 40.0]), run_of([10.0, 40.0])
    b.cases = b.cases[:2]
    b.cases[1].status, b.cases[1].timing = Status.FAILED, None
    rows = {row[0]: row[1:] for row in comparison_rows(a, b)}
    assert rows["benchmark m=7168 k=16384 l=1"][3:] == ["FAIL", "-", "-", "-"]
    assert rows["benchmark m=4096 k=7168 l=8"][3:] == ["-", "-", "-", "-"]


@pytest.mark.parametrize(("ref", "words"), [("7", "no run 7"), ("{tmp}/none.json", "neither a history id"),
                                            ("{tmp}/bad.json", "not a result written by `eval --json`")])
def test_compare_refuses_what_it_cannot_read_in_one_line(tmp_path, capsys, ref, words):
    (tmp_path / "bad.json").write_text("{}")
    assert main(["compare", ref.format(tmp=tmp_path), "1"]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_an_unwritable_history_is_a_note_never_a_failed_eval(monkeypatch, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(HISTORY_ENV, str(blocker / "h.db"))  # a folder that cannot be made
    monkeypatch.setattr(eval_command, "evaluate_submission", lambda *a, **k: run_of([20.0, 40.0]))
    assert main(["eval", "nvfp4_gemv", "x.py"]) == 0
    assert "not kept in the history" in capsys.readouterr().err
    assert os.path.exists(blocker)
