"""problems.shared.blockscaled's output check: every output of a list judged, the first failure named
(as when they were compared one by one), host outputs against expected ones wherever those live."""

from __future__ import annotations

import math

import pytest
import torch

from problems.shared import blockscaled as bs

TOLERANCE = bs.Tolerance(rtol=1e-2, atol=1e-2)


def outputs(count: int = 3) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(7)
    return [torch.randn(3, 4, generator=generator).half() for _ in range(count)]


def test_correct_outputs_pass():
    expected = outputs()
    assert bs.compare_outputs([t.clone() for t in expected], expected, TOLERANCE) == (
        True, "all 3 outputs within atol=0.01 rtol=0.01")


def test_a_wrong_element_in_a_later_output_fails_and_is_named():
    expected = outputs()
    got = [t.clone() for t in expected]
    got[2][1, 3] += 1
    ok, message = bs.compare_outputs(got, expected, TOLERANCE)
    assert not ok and message.startswith("output[2]: 1 of 12 elements mismatch; worst at (1, 3)")


def test_the_first_failing_output_is_named_before_a_later_malformed_one():
    expected = outputs()
    got = [t.clone() for t in expected]
    got[0][0, 0] = float("nan")
    got[1] = got[1][:1]
    ok, message = bs.compare_outputs(got, expected, TOLERANCE)
    assert not ok and message.startswith("output[0]: 1 of 12 elements mismatch; worst at (0, 0): got nan")


def test_a_malformed_output_is_named_when_the_ones_before_it_pass():
    expected = outputs()
    got = [t.clone() for t in expected]
    got[1] = got[1].float()
    got[2][0, 0] += 5  # after the malformed one: not reached, as one by one
    assert bs.compare_outputs(got, expected, TOLERANCE) == (
        False, "output[1]: dtype torch.float32, expected torch.float16")


@pytest.mark.parametrize("value, passes", [(float("inf"), True), (-float("inf"), False)])
def test_infinities_must_match(value, passes):
    expected = outputs(1)[0]
    expected[0, 0] = float("inf")
    got = expected.clone()
    got[0, 0] = value
    assert bs.compare_tensor(got, expected, TOLERANCE)[0] is passes


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the parent's check device)")
def test_a_host_output_is_checked_against_an_expected_output_on_the_gpu():
    expected = outputs()
    got = [t.clone() for t in expected]
    got[1][2, 2] -= 3
    on_gpu = [t.cuda() for t in expected]
    assert bs.compare_outputs([t.clone() for t in expected], on_gpu, TOLERANCE)[0]
    ok, message = bs.compare_outputs(got, on_gpu, TOLERANCE)
    assert not ok and message.startswith("output[1]: 1 of 12 elements mismatch; worst at (2, 2)")


def rule(got: float, expected: float, tolerance: bs.Tolerance) -> bool:
    """The tolerance rule element by element in Python floats (IEEE double, as the check's float64)."""
    if math.isnan(got) or math.isnan(expected):
        return math.isnan(got) and math.isnan(expected)
    if math.isinf(got) or math.isinf(expected):
        return got == expected
    return abs(got - expected) <= tolerance.atol + tolerance.rtol * abs(expected)


SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-3, -1e-3, 0.99, 1.0101, 1.01, 2.0, 1e-40, -1e-40, 6e-8, 1.5e-5, 65504.0,
           3.0e38, float("inf"), float("-inf"), float("nan")]


TOLERANCES = [TOLERANCE, bs.Tolerance(rtol=0.0, atol=0.0), bs.Tolerance(rtol=0.0, atol=1e-2),
              bs.Tolerance(rtol=2.0, atol=0.0), bs.Tolerance(rtol=1e300, atol=1e300)]


def special_pairs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(got, expected): every pair of SPECIAL values in ``dtype``."""
    values = torch.tensor(SPECIAL, dtype=torch.float64).to(dtype)
    return values.repeat_interleave(len(SPECIAL)), values.repeat(len(SPECIAL))


def edge_pairs(count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(got, expected): bf16 pairs around |got - expected| = atol + rtol * |expected| for TOLERANCE,
    one ulp either side of the edge, ``count`` expected values five times each."""
    expected = (torch.randn(count, generator=torch.Generator().manual_seed(3)) * 4).bfloat16()
    steps = torch.tensor([-2, -1, 0, 1, 2], dtype=torch.float32)
    edge = (expected.float().abs() * TOLERANCE.rtol + TOLERANCE.atol)[:, None] + steps[None, :] * 2.0 ** -9
    return (expected.float()[:, None] + edge).bfloat16(), expected[:, None].expand(-1, len(steps))


def judged_by_the_rule(got: torch.Tensor, expected: torch.Tensor, tolerance: bs.Tolerance) -> list[bool]:
    """Each pair's verdict by ``rule``, in row-major order."""
    pairs = zip(got.double().flatten().tolist(), expected.double().flatten().tolist())
    return [rule(g, e, tolerance) for g, e in pairs]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
@pytest.mark.parametrize("tolerance", TOLERANCES)
def test_every_pair_of_special_values_is_judged_by_the_rule(dtype: torch.dtype, tolerance: bs.Tolerance) -> None:
    got, expected = special_pairs(dtype)
    judged = bs._within(got, expected, tolerance)[0].tolist()
    wanted = judged_by_the_rule(got, expected, tolerance)
    wrong = [(g, e) for g, e, j, w in zip(got.double().tolist(), expected.double().tolist(), judged, wanted) if j != w]
    assert not wrong, wrong[:5]


def test_elements_at_the_edge_of_the_allowance_are_judged_by_the_rule() -> None:
    got, expected = edge_pairs(4096)
    judged = bs._within(got, expected, TOLERANCE)[0].flatten().tolist()
    wanted = judged_by_the_rule(got, expected, TOLERANCE)
    assert judged == wanted and 0 < sum(wanted) < len(wanted)


@pytest.fixture
def fused_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The fused kernel's path taken on the CPU (its count by the rule's own passes); returns the sizes of the
    outputs it was handed, one entry per launch."""
    launches: list[int] = []

    def count(got: torch.Tensor, expected: torch.Tensor, tolerance: bs.Tolerance) -> torch.Tensor:
        launches.append(expected.numel())
        return (~bs._within(got, expected, tolerance)[0]).sum()

    monkeypatch.setattr(bs, "_fusable", lambda got, expected: got.dtype == expected.dtype)
    monkeypatch.setattr(bs, "fused_mismatches", count)
    return launches


def test_passing_outputs_are_judged_by_one_count_over_all_of_them(fused_on_the_cpu: list[int]) -> None:
    expected = outputs(8)
    assert bs.compare_outputs([t.clone() for t in expected], expected, TOLERANCE)[0]
    assert fused_on_the_cpu == [8 * 12]


def test_a_failure_among_outputs_judged_together_is_still_named(fused_on_the_cpu: list[int]) -> None:
    expected = outputs(8)
    got = [t.clone() for t in expected]
    got[5][2, 1] += 1
    ok, message = bs.compare_outputs(got, expected, TOLERANCE)
    assert not ok and message.startswith("output[5]: 1 of 12 elements mismatch; worst at (2, 1)")
    assert fused_on_the_cpu == [8 * 12] + [12] * 8  # the count over all, then one by one to name it


def test_outputs_of_another_shape_are_not_judged_together(fused_on_the_cpu: list[int]) -> None:
    expected = outputs(3)
    got = [t.clone() for t in expected]
    got[1] = got[1][:2]
    ok, message = bs.compare_outputs(got, expected, TOLERANCE)
    assert not ok and message.startswith("output[1]: shape (2, 4)")
    assert fused_on_the_cpu == [12]  # output[0] alone, then output[1]'s shape ends it
