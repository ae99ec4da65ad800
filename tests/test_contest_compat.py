"""Contest files run unchanged: the runner's own task/reference/utils modules, and one clear
'unsupported' verdict when this machine lacks what a file needs."""

from pathlib import Path

import pytest
import torch

from harness.contract.results import ExitCode, Status
from harness.contract.task_spec import list_problems
from harness.judge.run import evaluate_submission
from harness.judge.verdict.modes import MODES
from problems.shared import contest_utils

CONTEST = Path(__file__).resolve().parent / "contest"


@pytest.mark.parametrize("problem", list_problems())
def test_a_file_importing_reference_and_utils_passes_every_problem(problem):
    result = evaluate_submission(problem, CONTEST / "contest_imports.py", MODES["test"], "cpu")
    assert result.status == Status.PASSED, result.reason
    assert all(case.status == Status.PASSED for case in result.cases)


@pytest.mark.parametrize(
    ("file", "needs"),
    [
        ("needs_cuda.py", "needs a CUDA GPU: it calls CUDA directly"),
        ("fp4_scaled_mm.py", "needs an sm_100 (Blackwell) GPU: fp4 torch._scaled_mm"),
        ("inline_ptx.py", "needs a CUDA GPU: its Triton kernel uses inline PTX"),
    ],
)
def test_what_the_cpu_cannot_run_stops_at_the_first_case_with_one_line(file, needs):
    if torch.cuda.is_available():
        pytest.skip("these files run on a GPU; the CPU verdict needs a machine without one")
    result = evaluate_submission(None, CONTEST / file, MODES["all"], "cpu")
    assert result.status == Status.UNSUPPORTED and result.exit_code == ExitCode.UNSUPPORTED == 115
    assert result.reason.startswith(needs) and "this machine: CPU only" in result.reason
    assert "\n" not in result.reason and "Traceback" not in result.reason
    first, *rest = result.cases
    assert first.status == Status.UNSUPPORTED and rest
    assert all(case.status == Status.NOT_RUN and case.reason == f"not run: {needs.split(':')[0]}" for case in rest)


def test_utils_allclose_matches_the_contest_rule():
    expected = torch.tensor([1.0, 2.0, float("nan"), float("inf")])
    assert contest_utils.verbose_allclose(expected.clone(), expected, rtol=1e-3, atol=1e-3)[0]
    ok, lines = contest_utils.verbose_allclose(torch.tensor([1.0, 2.5, 0.0, float("inf")]), expected,
                                               rtol=1e-3, atol=1e-3)
    assert not ok and lines[0] == "Number of mismatched elements: 2"
    assert contest_utils.verbose_allclose(torch.zeros(2), torch.zeros(3))[1] == ["SIZE MISMATCH"]
    assert contest_utils.verbose_allequal(torch.ones(2), torch.tensor([1.0, 0.0]))[1][0].endswith(": 1")


def test_deterministic_context_restores_the_settings():
    before = torch.are_deterministic_algorithms_enabled()
    with contest_utils.DeterministicContext():
        assert torch.are_deterministic_algorithms_enabled()
    assert torch.are_deterministic_algorithms_enabled() == before
