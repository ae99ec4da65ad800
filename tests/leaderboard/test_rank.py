"""The ranking rule: geomean of benchmark medians, best per file and per author, failures apart."""

import dataclasses
import math

import pytest

from harness.contract.results import Status
from harness.leaderboard.rank import (
    build_board,
    competition_ranks,
    geometric_mean,
    score_us,
    status_label,
    why_not_rankable,
)

from .samples import B200, make_run, sha, stored


def test_geometric_mean():
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([5.0]) == pytest.approx(5.0)
    assert geometric_mean([]) is None
    assert geometric_mean([1.0, 0.0]) is None
    assert geometric_mean([1.0, math.inf]) is None


def test_score_is_the_geomean_of_benchmark_medians():
    assert score_us(make_run((10.0, 40.0, 20.0))) == pytest.approx((10 * 40 * 20) ** (1 / 3))
    run = make_run((10.0, 40.0, 20.0))
    run.cases[2].status = Status.FAILED
    assert score_us(run) is None  # one failed benchmark: no score


def test_competition_ranks_share_ties():
    assert competition_ranks([1.0, 2.0, 2.0, 3.0]) == [1, 2, 2, 4]
    assert competition_ranks([5.0, 5.0004]) == [1, 1]  # equal to the nanosecond
    assert competition_ranks([]) == []


def test_ranked_by_geomean_lower_first():
    runs = [stored(make_run((30.0, 30.0, 30.0)), run_id=1, author="a", file="slow.py"),
            stored(make_run((10.0, 10.0, 10.0)), run_id=2, author="b", file="fast.py"),
            stored(make_run((20.0, 20.0, 20.0)), run_id=3, author="c", file="mid.py")]
    board = build_board("nvfp4_gemv", runs)
    assert [(e.rank, e.stored.author) for e in board.ranking] == [(1, "b"), (2, "c"), (3, "a")]
    assert board.ranking[0].score_us == pytest.approx(10.0)
    assert board.device_name == B200 and not board.others and not board.failed


def test_best_run_per_file():
    same = "the same file bytes"
    runs = [stored(make_run((20.0, 20.0, 20.0)), run_id=1, author="a", file="x.py", content=same),
            stored(make_run((15.0, 15.0, 15.0)), run_id=2, author="a", file="x.py", content=same),
            stored(make_run(None, status=Status.TIMEOUT, reason="flaky"), run_id=3, author="a", file="x.py",
                   content=same)]
    board = build_board("nvfp4_gemv", runs)
    assert len(board.ranking) == 1 and board.ranking[0].stored.id == 2
    assert not board.failed  # a file with a rankable run is ranked, whatever its other runs did


def test_one_entry_per_author_others_listed_below():
    runs = [stored(make_run((20.0, 20.0, 20.0)), run_id=1, author="ada", file="v1.py"),
            stored(make_run((10.0, 10.0, 10.0)), run_id=2, author="ada", file="v2.py"),
            stored(make_run((15.0, 15.0, 15.0)), run_id=3, author="bob", file="b.py")]
    board = build_board("nvfp4_gemv", runs)
    assert [(e.rank, e.stored.author, e.stored.sha256) for e in board.ranking] == [
        (1, "ada", sha("v2.py")), (2, "bob", sha("b.py"))]
    assert [e.stored.sha256 for e in board.others] == [sha("v1.py")]
    assert board.others[0].rank is None


def test_failures_are_listed_apart_with_their_status_never_their_reason():
    runs = [stored(make_run((20.0, 20.0, 20.0)), run_id=1, author="a", file="ok.py")]
    for run_id, status in enumerate((Status.FAILED, Status.REJECTED, Status.CRASHED, Status.TIMEOUT), 2):
        run = make_run(None, status=status, reason=f"{status.value} because")
        runs.append(stored(run, run_id=run_id, author=f"x{run_id}", file=f"{status.value}.py"))
    board = build_board("nvfp4_gemv", runs)
    assert [e.stored.author for e in board.ranking] == ["a"]
    assert sorted(e.result.status for e in board.failed) == sorted(
        [Status.FAILED, Status.REJECTED, Status.CRASHED, Status.TIMEOUT])
    assert all(e.rank is None and e.note == e.result.status.value for e in board.failed)
    assert all(e.result.reason.endswith("because") for e in board.failed)  # kept in the stored result


def test_a_run_without_a_device_does_not_blank_the_board():
    """The service stores '?' for a run whose evaluation raised; the latest such run must not
    move the board off every real run (nor must a harness error on another GPU)."""
    real = [stored(make_run((10.0, 10.0, 10.0)), run_id=1, author="a", file="a.py"),
            stored(make_run((12.0, 12.0, 12.0)), run_id=2, author="b", file="b.py")]
    broken = make_run(None, status=Status.CRASHED, reason="HarnessFailure: its Dask worker died 2 times")
    broken.device = {}
    unknown = stored(broken, run_id=3, author="c", file="c.py", device_name="?")
    blank = dataclasses.replace(stored(broken, run_id=4, author="d", file="d.py"), device_name="")
    raised = dataclasses.replace(stored(broken, run_id=5, author="e", file="e.py", device_name="NVIDIA H100"),
                                 harness_error=True)
    board = build_board("nvfp4_gemv", [*real, unknown, blank, raised])
    assert board.device_name == B200 and [e.stored.author for e in board.ranking] == ["a", "b"]
    assert board.hidden_runs == 3
    only_unknown = build_board("nvfp4_gemv", [unknown])  # nothing real: still listed, not lost
    assert only_unknown.device_name == "?" and [e.stored.author for e in only_unknown.failed] == ["c"]


def test_same_bytes_from_two_authors_are_two_entries():
    same = "identical file bytes"
    runs = [stored(make_run((20.0, 20.0, 20.0)), run_id=1, author="alice", file="mine.py", content=same),
            stored(make_run((15.0, 15.0, 15.0)), run_id=2, author="bob", file="copy.py", content=same),
            stored(make_run((30.0, 30.0, 30.0)), run_id=3, author="alice", file="old.py")]
    board = build_board("nvfp4_gemv", runs)
    assert [(e.rank, e.stored.author, e.stored.id) for e in board.ranking] == [(1, "bob", 2), (2, "alice", 1)]
    assert [e.stored.id for e in board.others] == [3]  # still one best entry per author
    failed = make_run(None, status=Status.TIMEOUT, reason="slow")
    runs.append(stored(failed, run_id=4, author="carol", file="c.py", content=same))
    assert [e.stored.author for e in build_board("nvfp4_gemv", runs).failed] == ["carol"]


def test_not_rankable_runs_are_listed_not_ranked():
    cpu = make_run((900.0, 800.0, 700.0), device_type="cpu", sol_us=None)
    runs = [stored(cpu, run_id=1, author="a", file="cpu.py")]
    board = build_board("nvfp4_gemv", runs)
    assert not board.ranking and not board.failed
    assert [e.note for e in board.not_rankable] == ["not rankable (cpu)"]
    assert why_not_rankable(make_run(rankable=False)) == "not rankable (no secret seed, or an incomplete run)"
    public = make_run(rankable=False)
    public.mode = "benchmark"
    assert why_not_rankable(public) == "not rankable (benchmark mode: public seeds)"


def test_ties_share_a_rank_and_the_earlier_file_comes_first():
    runs = [stored(make_run((10.0, 10.0, 10.0)), run_id=2, author="late", file="l.py"),
            stored(make_run((10.0, 10.0, 10.0)), run_id=1, author="early", file="e.py"),
            stored(make_run((12.0, 12.0, 12.0)), run_id=3, author="third", file="t.py")]
    board = build_board("nvfp4_gemv", runs)
    assert [(e.rank, e.stored.author) for e in board.ranking] == [(1, "early"), (1, "late"), (3, "third")]


def test_board_is_for_one_device_and_version_others_are_counted():
    runs = [stored(make_run((10.0, 10.0, 10.0)), run_id=1, author="a", file="a.py"),
            stored(make_run((5.0, 5.0, 5.0), device="NVIDIA H100"), run_id=2, author="b", file="b.py"),
            stored(make_run((7.0, 7.0, 7.0), version="0.0.1"), run_id=3, author="c", file="c.py")]
    board = build_board("nvfp4_gemv", runs, B200, make_run().harness_version)
    assert [e.stored.author for e in board.ranking] == ["a"] and board.hidden_runs == 2
    latest = build_board("nvfp4_gemv", runs)  # no scope asked: the latest run's device and version
    assert latest.harness_version == "0.0.1" and [e.stored.author for e in latest.ranking] == ["c"]
    fallback = build_board("nvfp4_gemv", runs, "a GPU with no runs", "9.9")
    assert fallback.harness_version == "0.0.1"


def test_a_file_this_machine_cannot_run_shows_what_it_needs():
    needs = ("needs an sm_100 (Blackwell) GPU: it targets sm_100a/sm_103a; this machine: NVIDIA H100 80GB HBM3 "
             "(sm_90); instead: run it on a B200")
    run = make_run(None, status=Status.UNSUPPORTED, reason=needs)
    assert status_label(run) == "needs an sm_100 (Blackwell) GPU"
    assert status_label(make_run()) == "passed"
