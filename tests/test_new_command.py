"""`python -m harness new PROBLEM [PATH]`: a problem's template, never over a file without --force;
`python -m harness --version`."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness import __version__
from harness.commands.main import main
from harness.contract.results import ExitCode
from harness.contract.submission_file import read_submission
from harness.contract.task_spec import PROBLEMS_DIR

REPO = Path(__file__).resolve().parent.parent


def test_new_writes_the_template_with_the_users_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["new", "nvfp4_gemm", "--author", "ada"]) == 0
    written = tmp_path / "submission.py"
    template = (PROBLEMS_DIR / "nvfp4_gemm" / "submission.py").read_text()
    assert written.read_text() == template.replace("#!POPCORN author harness-baselines", "#!POPCORN author ada")
    file = read_submission(written)
    assert (file.leaderboard, file.author) == ("nvfp4_gemm", "ada")
    assert "python -m harness eval submission.py" in capsys.readouterr().out


def test_new_refuses_to_overwrite_without_force(tmp_path, capsys):
    target = tmp_path / "mine.py"
    target.write_text("my work\n")
    assert main(["new", "nvfp4_gemv", str(target)]) == ExitCode.BAD_INPUT
    assert target.read_text() == "my work\n" and "--force" in capsys.readouterr().err
    assert main(["new", "nvfp4_gemv", str(target), "--force"]) == 0
    assert read_submission(target).leaderboard == "nvfp4_gemv"


@pytest.mark.parametrize(("argv", "words"), [
    (["new", "nvfp4_conv"], "unknown problem 'nvfp4_conv'"),
    (["new", "timing_ladder"], "unknown problem 'timing_ladder'"),  # the harness's calibration, no contest's
    (["new", "nvfp4_gemv", "{tmp}/notes.txt"], "not a .py file"),
])
def test_new_refuses_bad_input_in_one_line(tmp_path, capsys, argv, words):
    assert main([a.format(tmp=tmp_path) for a in argv]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_new_into_a_folder_writes_submission_py_there(tmp_path):
    assert main(["new", "nvfp4_group_gemm", str(tmp_path)]) == 0
    assert read_submission(tmp_path / "submission.py").leaderboard == "nvfp4_group_gemm"


def test_version_names_the_harness_and_torch():
    run = subprocess.run([sys.executable, "-m", "harness", "--version"], capture_output=True, text=True, cwd=REPO,
                         timeout=120)
    assert run.returncode == 0
    assert f"nvfp4-harness {__version__}" in run.stdout and f"torch {torch.__version__}" in run.stdout


def test_new_lists_the_contest_problems_in_its_help_without_the_calibration_ones():
    from harness.commands.main import build_parser

    parser = build_parser()
    new = parser._subparsers._group_actions[0].choices["new"]
    text = new.format_help()
    assert "problems: " in text and "nvfp4_gemv" in text and "mxfp8_gemm" in text and "timing_ladder" not in text
