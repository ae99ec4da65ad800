"""`make` keeps the harness's exit code where it can: GNU make itself exits 2 for any failed recipe,
so each harness command's own code is written to EXIT_CODE_FILE and scripts/make.sh exits with it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.contract.results import ExitCode

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")


def _broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.py"
    path.write_text("#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(:\n")  # 113 before any worker
    return path


def test_make_records_the_harness_code_and_the_wrapper_exits_with_it(tmp_path):
    code_file = tmp_path / "code"
    args = ["eval", f"SUBMISSION={_broken(tmp_path)}", "DEVICE=cpu", f"PYTHON={sys.executable}"]
    plain = subprocess.run(["make", "-s", *args, f"EXIT_CODE_FILE={code_file}"], cwd=REPO, capture_output=True,
                           text=True, timeout=120)
    assert plain.returncode == 2 and "Error 113" in plain.stderr  # GNU make's own status
    assert code_file.read_text().strip() == str(int(ExitCode.BAD_INPUT))
    wrapped = subprocess.run(["sh", "scripts/make.sh", "-s", *args], cwd=REPO, capture_output=True, text=True,
                             timeout=120)
    assert wrapped.returncode == ExitCode.BAD_INPUT, wrapped.stdout + wrapped.stderr


def test_the_wrapper_passes_success_and_makes_own_errors_through():
    ok = subprocess.run(["sh", "scripts/make.sh", "-s", "-n", "sol"], cwd=REPO, capture_output=True, timeout=60)
    assert ok.returncode == 0
    missing = subprocess.run(["sh", "scripts/make.sh", "no-such-target"], cwd=REPO, capture_output=True, timeout=60)
    assert missing.returncode == 2  # make's own failure: nothing of the harness ran


def test_leaderboard_takes_the_variables_eval_takes():
    run = subprocess.run(["make", "-n", "leaderboard", "DEVICE=cpu", "PROBLEM=nvfp4_gemv", "ARGS=--force"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    assert "-m harness leaderboard --problem nvfp4_gemv --device cpu --force" in run.stdout


def test_the_recipe_shows_the_command_not_its_exit_code_plumbing(tmp_path):
    # As a contestant's shell runs it: under `make test` the outer make's variables would make this
    # one a sub-make, which prints "make[1]: Entering directory" first.
    shell = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    run = subprocess.run(["sh", "scripts/make.sh", "sol", "DEVICE=cpu", f"PYTHON={sys.executable}"], cwd=REPO,
                         capture_output=True, text=True, timeout=120, env=shell)
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first == f"{sys.executable} -m harness sol nvfp4_gemv --device cpu"
    assert "code=" not in run.stdout + run.stderr and "EXIT_CODE_FILE" not in run.stdout
