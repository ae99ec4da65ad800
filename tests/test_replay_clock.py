"""The replay clock's graph body and arithmetic, on the CPU (the graphs themselves need a GPU)."""

from __future__ import annotations

import statistics

import pytest

from harness.sol import replay_clock
from harness.sol.replay_clock import Floors


def test_each_call_lies_between_its_floor_and_its_closing_mark_and_every_flush_outside_them():
    log: list[str] = []
    calls = [lambda i=i: log.append(f"call{i}") for i in range(3)]
    replay_clock.capture_groups(calls, lambda: log.append("flush"), lambda slot: log.append(f"mark{slot}"))
    assert log == [entry for i in range(3)
                   for entry in ("flush", f"mark{3 * i}", f"mark{3 * i + 1}", f"call{i}", f"mark{3 * i + 2}")]


def test_each_group_gives_its_floor_and_its_call_in_us():
    slots = [1_000, 2_000, 4_500, 10_000, 10_750, 11_000, 0, 0, 0]  # ns: group i is slots 3i..3i+2
    assert replay_clock.group_stamps_us(slots, 2) == (pytest.approx([1.0, 0.75]), pytest.approx([2.5, 0.25]))


def test_a_reading_takes_each_calls_own_floor_off_then_the_trimmed_mean_and_spread():
    """A floor that drifts between groups is taken off the call it was measured beside, not averaged in."""
    calls = [4.0, 4.1, 4.2, 4.3, 4.4, 4.5, 4.6, 4.7, 50.0, 0.0]  # one preempted call, one torn: trimmed off
    floors = [1.0, 1.0, 1.0, 1.0, 1.4, 1.4, 1.4, 1.4, 1.0, 1.0]
    reading = replay_clock.reading_of(floors, calls)
    assert reading.us == pytest.approx(statistics.fmean(sorted(c - f for c, f in zip(calls, floors))[1:-1]))
    assert (reading.p10_us, reading.p90_us, reading.calls) == (pytest.approx(3.0), pytest.approx(3.3), 10)
    assert reading.floor_us == pytest.approx(statistics.fmean(sorted(floors)[1:-1]))  # the floors it took off
    with pytest.raises(ValueError):
        replay_clock.reading_of(floors[:-1], calls)  # a call without its floor


def test_the_timer_tick_is_the_finest_step_the_stamps_show():
    assert replay_clock.timer_tick_ns([0, 1024, 3072, 3072, 8192]) == 1024
    assert replay_clock.timer_tick_ns([5, 37, 69]) == 32
    assert replay_clock.timer_tick_ns([7]) == 0


def test_an_empty_kernel_reads_the_stamps_with_it_less_the_stamps_with_nothing():
    assert Floors(nothing_us=1.13, empty_us=2.26).empty_kernel_us == pytest.approx(1.13)


def test_quantiles_are_readings_that_were_measured():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [replay_clock.quantile(values, q) for q in (0.0, 0.1, 0.5, 0.9, 1.0)] == [1.0, 1.0, 3.0, 5.0, 5.0]
    assert replay_clock.trimmed_mean([1.0, 2.0]) == pytest.approx(1.5)  # too few to trim: all kept


def test_the_stamp_and_empty_kernels_assemble_for_the_h100(tmp_path):
    """The PTX the driver loads on the GPU, assembled here by the ptxas Triton ships (sm_90: the H100)."""
    import subprocess
    from pathlib import Path

    import triton

    from harness.sol.globaltimer import EMPTY_NAME, KERNEL_NAME, PTX

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    (tmp_path / "stamp.ptx").write_text(PTX)
    done = subprocess.run([str(ptxas), "-arch=sm_90", str(tmp_path / "stamp.ptx"), "-o", str(tmp_path / "stamp.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    cubin = (tmp_path / "stamp.cubin").read_bytes()
    assert KERNEL_NAME.encode() in cubin and EMPTY_NAME.encode() in cubin  # both entries the driver looks up
