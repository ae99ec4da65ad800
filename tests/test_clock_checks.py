"""The fidelity check's decisions (scripts/clock_checks.py): ncu's empty-kernel floor and a second launch's cost."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("clock_checks_script",
                                               Path(__file__).resolve().parent.parent / "scripts" / "clock_checks.py")
clock_checks = sys.modules["clock_checks_script"] = importlib.util.module_from_spec(_SPEC)  # dataclasses look it up
_SPEC.loader.exec_module(clock_checks)  # a script beside the GPU step's others, not a package module
NcuFloor = clock_checks.NcuFloor


def test_an_ncu_floor_over_the_band_says_below_which_time_raw_ncu_cannot_agree():
    floor = NcuFloor(ncu_empty_us=2.10, replay_empty_us=1.13)
    assert floor.excess_us == pytest.approx(0.97) and floor.matters
    assert floor.raw_band_holds_from_us == pytest.approx(0.97 / 0.03)  # about 32 us
    assert floor.ncu_less_floor_us(29.22, kernels_per_call=2) == pytest.approx(29.22 - 1.94)  # per kernel
    assert floor.ncu_less_floor_us(None, 1) is None
    assert "cannot hold below 32 us" in floor.text() and "0.97 us off per kernel" in floor.text()


def test_an_ncu_floor_inside_the_band_changes_nothing():
    floor = NcuFloor(ncu_empty_us=1.30, replay_empty_us=1.13)
    assert not floor.matters and floor.raw_band_holds_from_us == 0.0
    assert floor.ncu_less_floor_us(2.74, 1) is None
    assert "replay is held against raw ncu" in floor.text()


def _rows(shape: str, once: tuple[float, float, float], twice: tuple[float, float, float]) -> list[dict]:
    keys = ("harness_us", "replay_us", "ncu_us")
    return [{"file": clock_checks.ONCE, "shape": shape, **dict(zip(keys, once))},
            {"file": clock_checks.TWICE, "shape": shape, **dict(zip(keys, twice))}]


@pytest.mark.parametrize(("twice", "verdict"), [
    ((6.6, 4.34, 6.22), "stream gap"),          # the harness pays 2 us more for the 2nd launch, replay adds it
    ((4.55, 2.34, 6.22), "stamps undercount"),  # the harness adds, replay reads the 2nd launch 2 us short
    ((4.6, 4.4, 6.22), "both additive"),        # neither: the GEMM's two different kernels are the cause
    ((5.4, 4.4, 6.22), "open"),                 # the harness 0.8 us over: too small to call, too big to ignore
])
def test_a_second_launch_is_judged_by_what_each_clock_adds_for_it(twice, verdict):
    found = clock_checks.additivity(_rows("n=270336 iters=10", (2.28, 2.17, 3.11), twice))
    assert len(found) == 1 and found[0]["verdict"].startswith(verdict)
    assert found[0]["harness_us"] == pytest.approx(twice[0] - 4.56)
    assert found[0]["ncu_us"] == pytest.approx(0.0)


def test_only_compute_rungs_in_both_files_are_judged_and_a_missing_clock_leaves_it_open():
    rows = _rows("n=65536 iters=1", (1.8, 1.88, 2.74), (3.0, 3.1, 4.5))  # memory rung: the 2nd pass meets a warm L2
    rows += [{"file": clock_checks.TWICE, "shape": "n=270336 iters=203", "harness_us": 9.8}]  # no single row
    rows += _rows("n=270336 iters=548", (9.97, 10.02, 10.98), (19.9, None, None))
    found = clock_checks.additivity(rows)
    assert [r["shape"] for r in found] == ["n=270336 iters=548"]
    assert found[0]["replay_us"] is None and found[0]["verdict"].startswith("open (a clock is missing)")


def test_the_lines_name_one_verdict_when_every_rung_shares_it_else_mixed():
    same = clock_checks.additivity(_rows("n=1 iters=10", (2.0, 2.0, 3.0), (6.0, 4.0, 6.0))
                                   + _rows("n=1 iters=548", (10.0, 10.0, 11.0), (22.0, 20.0, 22.0)))
    assert same[0]["verdict"] == same[1]["verdict"]
    missing = clock_checks.additivity(_rows("n=1 iters=1239", (None, 20.0, 21.0), (40.0, 40.0, 42.0)))
    assert clock_checks.additivity_lines(same + missing)[-2] == (
        f"second launch, every compute rung (2 of 3 with both clocks): {same[0]['verdict']}")
    mixed = same + clock_checks.additivity(_rows("n=1 iters=203", (5.0, 5.0, 6.0), (10.0, 10.0, 12.0)))
    assert clock_checks.additivity_lines(mixed)[-2] == (
        "second launch, every compute rung (3 of 3 with both clocks): mixed")
    assert clock_checks.additivity_lines(missing)[-2].endswith("no rung with both clocks")
    assert "missing" in clock_checks.additivity_lines([])[0]


def test_the_stream_replay_is_expected_to_charge_a_second_launch_as_the_harness_does():
    """The stream replay's second launch within 0.3 us of the harness's: yes; a graph-like 0: no; none: open."""
    rows = []
    for shape, stream_once, stream_twice in (("n=1 iters=10", 2.2, 6.35), ("n=1 iters=548", 10.0, 20.1),
                                             ("n=1 iters=203", 5.0, None)):
        pair = _rows(shape, (2.28 if shape.endswith("=10") else 10.0, 2.17, 3.11), (6.52, 4.34, 6.22))
        pair[0]["stream_us"], pair[1]["stream_us"] = stream_once, stream_twice
        rows += pair
    found = clock_checks.additivity(rows)
    assert [r["stream_as_harness"] for r in found] == [True, False, None]
    assert found[0]["stream_us"] == pytest.approx(1.95)  # the harness's +1.96, as expected
    lines = clock_checks.additivity_lines(found)
    assert lines[0].endswith("stream gap: the harness pays a second launch, the graph does not; stream as harness: yes")
    assert "stream +1.95" in lines[0] and "stream -" in lines[2]
    assert lines[-1] == ("second launch by the stream replay: within 0.3 us of the harness's on 1 of 2 rungs with "
                         "both (expected: all)")


def test_issue_38s_count_keeps_the_twice_launched_ladder_apart_and_skips_rows_without_both_clocks():
    rows = [{"file": clock_checks.ONCE, "harness_in_band": True}, {"file": "nvfp4_gemm/triton_gemm.py",
                                                                  "harness_in_band": False},
            {"file": "mxfp8_gemm/scaled_mm_mxfp8.py", "harness_in_band": None},
            {"file": clock_checks.TWICE, "harness_in_band": False}, {"file": clock_checks.TWICE,
                                                                     "harness_in_band": True}]
    line = clock_checks.acceptance_line(rows, "harness_in_band", "harness ~ graph replay")
    assert "harness ~ graph replay: 1 of 2 in band" in line
    assert line.endswith("the ladder launched twice (the launch-gap diagnostic): 1 of 2")
