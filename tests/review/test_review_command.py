"""`python -m harness review` over a small leaderboard database built here (no GPU): verdicts, the
JSON, the stored reviews, the pages, and one line with exit 113 (or 110) for what cannot run."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.commands.main import main
from harness.review import review_store
from tests.leaderboard.samples import make_run

PLANTED = Path(__file__).resolve().parent / "planted"
REPO = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"
ENTRIES = {  # file: (author, stored medians of the three GEMV shapes)
    "triton_gemv.py": ("base", (31.8, 52.3, 13.5)),
    "native_detour.py": ("mallory", (30.0, 50.0, 13.0)),
    "too_fast.py": ("eve", (30.0, 50.0, 1.0)),  # shape 3 at 1 us: under its 4.3 us speed of light
}


@pytest.fixture
def board(tmp_path):
    """submissions/nvfp4_gemv/ with a shipped baseline, a planted detour (and its helper), an honest file
    whose stored result is too fast; their ranked runs in lb.db."""
    folder = tmp_path / "submissions" / "nvfp4_gemv"
    folder.mkdir(parents=True)
    shutil.copy(REPO / "submissions" / "nvfp4_gemv" / "triton_gemv.py", folder)
    shutil.copy(PLANTED / "native_detour.py", folder)
    shutil.copy(PLANTED / "_detour_native.py", folder)
    shutil.copy(REPO / "submissions" / "nvfp4_gemv" / "torch_reference.py", folder / "too_fast.py")
    from harness.leaderboard.store import Store

    with Store.open(tmp_path / "lb.db") as store:
        for name, (author, medians) in ENTRIES.items():
            path = folder / name
            store.add(make_run(medians, path=str(path), device=H100), problem="nvfp4_gemv", submission_path=str(path),
                      sha256=hashlib.sha256(path.read_bytes()).hexdigest(), author=author, device_name=H100)
    return tmp_path


def review(board, *argv):
    return main(["review", "--db", str(board / "lb.db"), "--out", str(board / "site"), "--device", "cpu", *argv])


def verdicts(record):
    return {Path(e["submission"]).name: e["verdict"] for e in record["entries"]}


def test_the_review_gives_each_top_entry_a_verdict(board, capsys):
    assert review(board, "--json", str(board / "review.json")) == 0
    out, err = capsys.readouterr()
    record = json.loads((board / "review.json").read_text())
    assert verdicts(record) == {"triton_gemv.py": "clean", "native_detour.py": "look here", "too_fast.py": "look here"}
    by_file = {Path(e["submission"]).name: e for e in record["entries"]}
    assert {f["class"] for f in by_file["too_fast.py"]["flags"]} == {"physics_floor"}
    assert [(f["class"], f["file"], f["line"]) for f in by_file["native_detour.py"]["flags"]] == [
        ("native_reach", "_detour_native.py", 3)]
    assert by_file["native_detour.py"]["files"][1:] == ["_detour_native.py"]
    assert all("dynamic checks" in e["not_run"][-1] for e in record["entries"])
    assert sum("dynamic checks (rerun, clock, sanitize): not run: --device cpu" in line
               for line in err.splitlines()) == 1
    assert "look here" in out and "_detour_native.py:3" in out and "Traceback" not in err


def test_top_n_takes_the_best_scores(board):
    assert review(board, "--top", "1", "--json", str(board / "one.json")) == 0
    assert list(verdicts(json.loads((board / "one.json").read_text()))) == ["too_fast.py"]


def test_verdicts_are_stored_in_the_leaderboard_database(board):
    assert review(board) == 0
    assert review(board, "--top", "2") == 0
    connection = sqlite3.connect(board / "lb.db")
    assert connection.execute("SELECT MAX(batch), COUNT(*) FROM reviews").fetchone() == (2, 5)
    latest = review_store.latest(connection, "nvfp4_gemv")
    assert [(Path(r.submission).name, r.verdict.value) for r in latest] == [("too_fast.py", "look here"),
                                                                           ("native_detour.py", "look here")]
    flags = connection.execute("SELECT class, file, line FROM review_flags JOIN reviews ON reviews.id = review_id "
                               "WHERE batch = 2 AND reviews.submission_path LIKE '%native_detour.py'").fetchall()
    assert flags == [("native_reach", "_detour_native.py", 3)]


def test_the_page_shows_every_verdict_and_flag_and_the_board_links_it(board):
    assert review(board) == 0
    page = (board / "site" / "nvfp4_gemv" / "review.html").read_text()
    for text in ("nvfp4_gemv review", "native_detour.py", "look here", "clean", "_detour_native.py:3",
                 "imports ctypes", "below the speed of light", "Not run: dynamic checks"):
        assert text in page
    assert 'href="review.html"' in (board / "site" / "nvfp4_gemv" / "index.html").read_text()


def test_hostile_source_lines_are_escaped_on_the_page(board):
    hostile = board / "submissions" / "nvfp4_gemv" / "native_detour.py"
    hostile.write_text(hostile.read_text() + "x = '<script>alert(1)</script>' + ctypes_name\n")
    from harness.leaderboard.store import Store

    with Store.open(board / "lb.db") as store:
        store.add(make_run((1.0, 2.0, 1.0), path=str(hostile), device=H100), problem="nvfp4_gemv",
                  submission_path=str(hostile), sha256=hashlib.sha256(hostile.read_bytes()).hexdigest(),
                  author="<b>mallory</b>", device_name=H100)
    assert review(board) == 0
    page = (board / "site" / "nvfp4_gemv" / "review.html").read_text()
    assert "<script>" not in page and "<b>mallory</b>" not in page and "&lt;b&gt;mallory&lt;/b&gt;" in page


def test_a_changed_file_is_a_source_flag(board):
    (board / "submissions" / "nvfp4_gemv" / "triton_gemv.py").write_text("def custom_kernel(data):\n    return 1\n")
    assert review(board, "--json", str(board / "r.json")) == 0
    entry = next(e for e in json.loads((board / "r.json").read_text())["entries"]
                 if e["submission"].endswith("triton_gemv.py"))
    assert entry["verdict"] == "look here" and entry["flags"][0]["class"] == "source"
    assert "has changed since the run" in entry["flags"][0]["evidence"]


@pytest.mark.parametrize(("argv", "needle"), [
    (["--problem", "nvfp4_conv"], "unknown problem 'nvfp4_conv'"),
    (["--problem", "nvfp4_gemm"], "has no runs of nvfp4_gemm"),
    (["--skip", "everything"], "unknown check(s) everything"),
    (["--top", "0"], "--top must be 1 or more"),
])
def test_bad_arguments_are_one_line_and_113(board, argv, needle, capsys):
    assert review(board, *argv) == 113
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0]


def test_a_missing_database_is_one_line_and_113(tmp_path, capsys):
    assert main(["review", "--db", str(tmp_path / "none.db"), "--device", "cpu"]) == 113
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no leaderboard database at" in err[0]
    assert not (tmp_path / "none.db").exists()


def test_cuda_without_a_gpu_is_110(board, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["review", "--db", str(board / "lb.db"), "--out", str(board / "site"), "--device", "cuda"]) == 110
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no CUDA GPU is visible" in err[0]


def test_a_board_without_a_review_links_none(board):
    from harness.leaderboard import render
    from harness.leaderboard.rank import build_board
    from harness.leaderboard.store import Store

    with Store.open(board / "lb.db") as store:
        page = render.render_html(build_board("nvfp4_gemv", store.runs("nvfp4_gemv")), "now")
    assert "review.html" not in page


def test_the_leaderboard_keeps_the_link_once_a_review_is_stored(board, monkeypatch):
    from harness.judge import run
    from tests.leaderboard.samples import FakeEvaluate

    assert review(board) == 0
    names = [p.name for p in (board / "submissions" / "nvfp4_gemv").glob("*.py")]
    monkeypatch.setattr(run, "evaluate_submission", FakeEvaluate({n: make_run(None, device_type="cpu") for n in names}))
    site = board / "fresh-site"
    assert main(["leaderboard", "--db", str(board / "lb.db"), "--out", str(site), "--device", "cpu",
                 "--submissions", str(board / "submissions"), "--problem", "nvfp4_gemv"]) == 0
    assert 'href="review.html"' in (site / "nvfp4_gemv" / "index.html").read_text()


def test_on_a_gpu_each_entry_is_rerun_from_its_own_bytes(board):
    """The dynamic checks through the review, with a stand-in for run_job: the too-fast entry's fresh run
    is 30x slower on its third shape, so its rank does not reproduce."""
    from harness.leaderboard.rank import build_board
    from harness.leaderboard.store import Store
    from harness.review import entry_review
    from harness.review.dynamic_checks import DeviceSetup

    jobs = []

    def runner(job):
        jobs.append(job)
        if job.mode == "leaderboard":
            return make_run((30.0, 50.0, 30.0) if job.filename == "too_fast.py" else ENTRIES[job.filename][1],
                            device=H100)
        return make_run(None, device=H100)

    with Store.open(board / "lb.db") as store:
        board_now = build_board("nvfp4_gemv", store.runs("nvfp4_gemv"))
        reviews = entry_review.review_board(board_now, store.connection, entry_review.ReviewOptions(top=3),
                                            DeviceSetup(runner, H100), lambda _: None)
    by_file = {Path(r.submission).name: r for r in reviews}
    assert by_file["too_fast.py"].verdict.value == "reproduces not"
    assert by_file["too_fast.py"].rerun["rank"] == 3 and by_file["triton_gemv.py"].verdict.value == "clean"
    folder = board / "submissions" / "nvfp4_gemv"
    assert {j.filename: j.source for j in jobs if j.mode == "leaderboard"} == {
        name: (folder / name).read_bytes() for name in ENTRIES}
