"""The command: arguments checked up front (113, one line), a full run with a fake evaluator."""

import argparse
import importlib.util
import json
import os
from pathlib import Path

import pytest

from harness.commands import leaderboard_command
from harness.contract.results import Status
from harness.judge import run
from harness.leaderboard.store import Store

from .samples import FakeEvaluate, make_run

REPO = Path(__file__).resolve().parents[2]


def run_cli(*argv):
    parser = argparse.ArgumentParser(prog="python -m harness")
    leaderboard_command.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["leaderboard", *argv])
    return args.handler(args)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "submissions"
    (root / "nvfp4_gemv").mkdir(parents=True)
    (root / "nvfp4_gemv" / "fast.py").write_text("#!POPCORN author ada\ndef custom_kernel(data):\n    return 1\n")
    (root / "nvfp4_gemv" / "broken.py").write_text("#!POPCORN author eve\ndef custom_kernel(data):\n    return 2\n")
    (root / "not_a_problem").mkdir()
    return root


def _options(tmp_path, tree):
    return ["--submissions", str(tree), "--db", str(tmp_path / "lb.db"), "--out", str(tmp_path / "site")]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--problem", "nvfp4_conv"], "unknown problem 'nvfp4_conv': choose one of"),
        (["--submissions", "/no/such/folder"], "no submissions folder at '/no/such/folder'"),
        (["--secret-seed-file", "/no/such/seed"], "secret seed:"),
        (["--gpu-check", "/no/such/file.py"], "--gpu-check /no/such/file.py: expected 'auto', 'none' or a .py file"),
    ],
)
def test_bad_arguments_are_one_line_and_113(argv, needle, capsys):
    assert run_cli(*argv) == 113
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0]


def test_a_bad_choice_is_113_too(capsys):
    with pytest.raises(SystemExit) as stop:
        run_cli("--device", "gpu")
    assert stop.value.code == 113
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice: 'gpu'" in err[0]


def test_a_bad_seed_and_a_bad_database_are_113(tmp_path, tree, capsys):
    seed = tmp_path / "seed"
    seed.write_text("not a number")
    seed.chmod(0o600)
    assert run_cli(*_options(tmp_path, tree), "--secret-seed-file", str(seed), "--device", "cpu") == 113
    (tmp_path / "lb.db").write_bytes(b"garbage" * 200)
    assert run_cli(*_options(tmp_path, tree), "--device", "cpu") == 113
    assert "not a leaderboard database" in capsys.readouterr().err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_a_gpu_is_110(tmp_path, tree, capsys):
    assert run_cli(*_options(tmp_path, tree), "--device", "cuda") == 110
    assert "no CUDA GPU is visible" in capsys.readouterr().err


def test_full_run_writes_pages_and_reuses_stored_runs(tmp_path, tree, monkeypatch, capsys):
    fake = FakeEvaluate({"fast.py": make_run((10.0, 20.0, 5.0), device_type="cpu"),
                         "broken.py": make_run(None, status=Status.TIMEOUT, reason="a timed call ran past 600 s",
                                               device_type="cpu")})
    monkeypatch.setattr(run, "evaluate_submission", fake)
    monkeypatch.setenv("NVFP4_SECRET_SEED", "1234")
    assert run_cli(*_options(tmp_path, tree), "--device", "cpu") == 0
    assert [c["options"].secret_seed for c in fake.calls] == [1234, 1234] and "NVFP4_SECRET_SEED" not in os.environ
    captured = capsys.readouterr()
    assert "skipping" in captured.err and "not_a_problem" in captured.err
    assert "[1/2] nvfp4_gemv/broken.py ... timeout: a timed call ran past 600 s" in captured.err
    assert "1 failed (listed on the pages)" in captured.err and "wrote" in captured.out
    site = tmp_path / "site"
    board = json.loads((site / "nvfp4_gemv" / "leaderboard.json").read_text())
    assert board["device"] == "cpu" and not board["ranking"]
    assert [e["note"] for e in board["not_rankable"]] == ["not rankable (cpu)"]
    assert [e["status"] for e in board["failed"]] == ["timeout"]
    assert (site / "nvfp4_gemv" / "index.html").is_file() and (site / "index.html").is_file()
    assert "not rankable (cpu)" in (site / "nvfp4_gemv" / "LEADERBOARD.md").read_text()

    assert run_cli(*_options(tmp_path, tree), "--device", "cpu", "--problem", "nvfp4_gemv") == 0
    assert len(fake.calls) == 2 and "cached" in capsys.readouterr().err
    assert run_cli(*_options(tmp_path, tree), "--device", "cpu", "--force") == 0
    assert len(fake.calls) == 4


@pytest.mark.skipif(importlib.util.find_spec("harness.sol") is None, reason="the evaluator's modules are not all in")
def test_real_evaluator_failures_are_listed(tmp_path):
    """The real evaluator through the command (fast cases only: a timed CPU run takes minutes)."""
    root = tmp_path / "submissions" / "nvfp4_gemv"
    root.mkdir(parents=True)
    (root / "syntax.py").write_text("def custom_kernel(data)\n")
    (root / "no_kernel.py").write_text("import not_a_module_anywhere\n")
    assert run_cli("--submissions", str(tmp_path / "submissions"), "--db", str(tmp_path / "lb.db"),
                   "--out", str(tmp_path / "site"), "--device", "cpu", "--problem", "nvfp4_gemv") == 0
    board = json.loads((tmp_path / "site" / "nvfp4_gemv" / "leaderboard.json").read_text())
    assert {e["file"]: e["note"] for e in board["failed"]} == {"syntax.py": "bad_input", "no_kernel.py": "bad_input"}
    assert "not_a_module_anywhere" not in (tmp_path / "site" / "nvfp4_gemv" / "index.html").read_text()
    with Store.open(tmp_path / "lb.db") as store:  # the reasons stay in the store, for the organizer
        reasons = {Path(r.submission_path).name: r.result.reason for r in store.runs("nvfp4_gemv")}
    assert "syntax error at line 1" in reasons["syntax.py"]
    assert "not_a_module_anywhere" in reasons["no_kernel.py"]
