"""The GPU's fused output check (problems/shared/compare_triton.py) against the tolerance rule written
element by element in Python floats: every pair of special values in every dtype it takes, pairs one
ulp either side of the allowance's edge, strided views, a count across many programs with a ragged
tail. The kernel runs under ``TRITON_INTERPRET=1`` in a subprocess (the variable must be set before
triton is imported); on a GPU, `scripts/gpu_check.sh compare` holds it against torch's float64 passes,
where a fused multiply-add would show."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_compare_outputs import TOLERANCE, TOLERANCES, edge_pairs, judged_by_the_rule, special_pairs

from problems.shared import blockscaled as bs

ROOT = Path(__file__).resolve().parents[1]
WORKER = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, sys.argv[1])
import torch
from problems.shared import blockscaled as bs
cases = torch.load(sys.argv[2])
print(json.dumps([int(bs.fused_mismatches(got, expected, bs.Tolerance(*tolerance)))
                  for got, expected, tolerance in cases]))
"""


def rule_count(got: torch.Tensor, expected: torch.Tensor, tolerance: bs.Tolerance) -> int:
    return judged_by_the_rule(got, expected, tolerance).count(False)


def cases() -> list[tuple[torch.Tensor, torch.Tensor, bs.Tolerance]]:
    made = [(*special_pairs(dtype), tolerance) for dtype in bs.FUSED_DTYPES for tolerance in TOLERANCES]
    tolerance = TOLERANCE
    made.append((*edge_pairs(2048), tolerance))
    generator = torch.Generator().manual_seed(5)
    expected = torch.randn(3, 40, 7, generator=generator).half()
    got = (expected.float() * (1 + 0.03 * torch.randn(3, 40, 7, generator=generator))).half()
    made.append((got.permute(2, 0, 1).contiguous().permute(1, 2, 0), expected, tolerance))  # another layout
    many = bs.FUSED_BLOCK * 3 + 123  # four programs, the last one ragged
    expected = torch.randn(many, generator=generator)
    made.append(((expected * (1 + 0.02 * torch.randn(many, generator=generator))), expected, tolerance))
    return made


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, int]]:
    made = cases()
    saved = tmp_path_factory.mktemp("fused") / "cases.pt"
    torch.save([(got, expected, (t.rtol, t.atol)) for got, expected, t in made], saved)
    run = subprocess.run([sys.executable, "-c", WORKER, str(ROOT), str(saved)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    fused = json.loads(run.stdout.strip().splitlines()[-1])
    return [(count, rule_count(got, expected, t)) for count, (got, expected, t) in zip(fused, made)]


def test_every_case_is_counted_as_the_rule_counts(judged: list[tuple[int, int]]) -> None:
    assert len(judged) == 4 * len(TOLERANCES) + 3
    assert [fused for fused, _ in judged] == [wanted for _, wanted in judged]


def test_the_cases_hold_passes_and_failures(judged: list[tuple[int, int]]) -> None:
    # A case all pass or all fail could not tell a wrong rule from a right one.
    sizes = [got.numel() for got, _, _ in cases()]
    assert all(0 < wanted < size for (_, wanted), size in zip(judged, sizes))
