"""The replay clock's graph body and arithmetic, on the CPU (the graphs themselves need a GPU)."""

from __future__ import annotations

import pytest

from harness.sol import replay_clock
from harness.sol.replay_clock import Floors, Reading


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


def test_a_reading_is_the_trimmed_mean_and_spread_of_the_stamps_less_their_floor():
    stamps = [3.0, 3.1, 3.2, 3.3, 3.4, 3.5, 3.6, 3.7, 50.0, 0.0]  # one preempted call, one torn: trimmed off
    reading = replay_clock.reading_of(stamps, floor_us=1.2)
    assert reading == Reading(us=pytest.approx(2.15), p10_us=pytest.approx(1.8), p90_us=pytest.approx(2.5), calls=10)


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
