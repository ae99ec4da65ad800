"""problems.shared.blockscaled's output check: every output of a list judged, the first failure named
(as when they were compared one by one), host outputs against expected ones wherever those live."""

from __future__ import annotations

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
