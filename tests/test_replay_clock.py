"""The replay clock's graph body and arithmetic, on the CPU (the graphs themselves need a GPU)."""

from __future__ import annotations

import pytest

from harness.sol import replay_clock
from harness.sol.replay_clock import Reading


def test_each_call_lies_between_its_own_marks_and_every_flush_outside_them():
    log: list[str] = []
    calls = [lambda i=i: log.append(f"call{i}") for i in range(3)]
    replay_clock.capture_groups(calls, lambda: log.append("flush"), lambda i: log.append(f"open{i}"),
                                lambda i: log.append(f"close{i}"))
    assert log == [entry for i in range(3) for entry in ("flush", f"open{i}", f"call{i}", f"close{i}")]


def test_stamp_pairs_are_each_groups_two_slots_in_us():
    slots = [1_000, 3_500, 10_000, 10_250, 20_000, 21_000]  # ns: group i is slots 2i and 2i+1
    assert replay_clock.stamp_pairs_us(slots, 3) == pytest.approx([2.5, 0.25, 1.0])
    assert replay_clock.stamp_pairs_us(slots, 2) == pytest.approx([2.5, 0.25])  # unused slots are not read


def test_a_reading_takes_the_median_event_and_the_trimmed_stamp_mean_less_its_floor():
    events = [2.0, 2.1, 2.2, 2.3, 9.0, 2.4, 2.5, 2.6, 2.7, 2.8]  # one preempted call
    stamps = [3.0] * 8 + [50.0, 0.0]  # trimmed: the 10% at each end go
    reading = replay_clock.reading_of(events, stamps, stamps_floor_us=1.2)
    assert reading == Reading(events_us=pytest.approx(2.45), events_p10_us=2.1, events_p90_us=2.8,
                              stamps_us=pytest.approx(1.8), calls=10)


def test_quantiles_are_readings_that_were_measured():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [replay_clock.quantile(values, q) for q in (0.0, 0.1, 0.5, 0.9, 1.0)] == [1.0, 1.0, 3.0, 5.0, 5.0]
    assert replay_clock.trimmed_mean([1.0, 2.0]) == pytest.approx(1.5)  # too few to trim: all kept


def test_the_stamp_kernel_assembles_for_the_h100(tmp_path):
    """The PTX the driver loads on the GPU, assembled here by the ptxas Triton ships (sm_90: the H100)."""
    import subprocess
    from pathlib import Path

    import triton

    from harness.sol.globaltimer import PTX

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    (tmp_path / "stamp.ptx").write_text(PTX)
    done = subprocess.run([str(ptxas), "-arch=sm_90", str(tmp_path / "stamp.ptx"), "-o", str(tmp_path / "stamp.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "stamp.cubin").stat().st_size > 0
