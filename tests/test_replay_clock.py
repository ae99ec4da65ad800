"""The replay clock's graph and stream bodies and arithmetic, on the CPU (the GPU runs need a GPU)."""

from __future__ import annotations

import contextlib
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


def test_the_stream_body_is_the_hold_then_the_graphs_groups():
    log: list[str] = []
    calls = [lambda i=i: log.append(f"call{i}") for i in range(2)]
    replay_clock.queue_groups(lambda: log.append("hold"), calls, lambda: log.append("flush"),
                              lambda slot: log.append(f"mark{slot}"))
    assert log == ["hold", "flush", "mark0", "mark1", "call0", "mark2", "flush", "mark3", "mark4", "call1", "mark5"]


def test_the_first_hold_is_three_host_queueings_within_its_bounds():
    assert replay_clock.first_hold_ns(0.004) == 12_000_000  # 4 ms to queue: a 12 ms hold
    assert replay_clock.first_hold_ns(0.0) == replay_clock.HOLD_MIN_NS
    assert replay_clock.first_hold_ns(5.0) == replay_clock.HOLD_MAX_NS  # a first pass that compiled: bounded


def test_a_hold_the_host_outlasted_is_doubled_and_the_body_queued_again():
    queued: list[int] = []

    def queue(hold_ns: int) -> float:
        queued.append(hold_ns)
        return 2_500_000.0  # the host takes 2.5 ms to queue the body, whatever the hold

    assert replay_clock.queue_covered(queue, 1_000_000) == 4_000_000
    assert queued == [1_000_000, 2_000_000, 4_000_000]  # 1 and 2 ms ended before the last launch
    queued.clear()
    assert replay_clock.queue_covered(queue, 2_550_000) == 5_100_000  # within the slack: not covered
    with pytest.raises(RuntimeError, match="synchronises with the GPU"):
        replay_clock.queue_covered(lambda hold_ns: 1e12, replay_clock.HOLD_MAX_NS // 2)


class _FakeStamper:
    """The stamp module on the CPU: each mark writes a rising time (ns) into its slot, and the log."""

    def __init__(self, slots: int, log: list[str]) -> None:
        self.slots, self.log, self.now = [0] * slots, log, 0

    def mark(self, index: int) -> None:
        self.now += 1_000
        self.slots[index] = self.now
        self.log.append("mark")

    def hold(self, ns: int) -> None:
        self.log.append(f"hold {ns}")

    def read(self) -> list[int]:
        return list(self.slots)


def test_the_stream_replay_holds_before_every_run_and_reads_each_after_a_synchronize(monkeypatch):
    """The stream mode end to end with the GPU faked: two warm passes, then REPLAYS runs of [hold, groups],
    each read after a synchronize, through the same arithmetic as the graph's; no graph is captured."""
    import torch

    log: list[str] = []
    stamper = _FakeStamper(3 * replay_clock.GROUPS, log)
    monkeypatch.setattr("harness.sol.globaltimer.Stamper", lambda slots: stamper)
    monkeypatch.setattr(torch.cuda, "Stream", lambda: None)
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: log.append("sync"))
    monkeypatch.setattr(torch.cuda, "CUDAGraph", None)  # a capture would fail
    clock = replay_clock.ReplayClock(flush=lambda: log.append("flush"), stream=True)
    reading = clock.time(lambda data: log.append(f"call {data}"), ["a", "b"])
    body = [entry for data in "ab" * replay_clock.ROUNDS
            for entry in ("flush", "mark", "mark", f"call {data}", "mark")]
    hold = f"hold {replay_clock.HOLD_MIN_NS}"  # the fake host queues in no time: the shortest hold
    assert log == [*body, "sync", *body, "sync", *([hold, *body, "sync"] * replay_clock.REPLAYS)]
    assert (reading.us, reading.floor_us, reading.calls) == (pytest.approx(0.0), pytest.approx(1.0),
                                                             2 * replay_clock.ROUNDS * replay_clock.REPLAYS)
    assert clock.hold_ns == replay_clock.HOLD_MIN_NS


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
    assert reading.median_us == pytest.approx(3.15)  # the harness's statistic, beside the trimmed mean
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


def test_the_stamp_empty_and_hold_kernels_assemble_for_the_h100(tmp_path):
    """The PTX the driver loads on the GPU, assembled here by the ptxas Triton ships (sm_90: the H100)."""
    import subprocess
    from pathlib import Path

    import triton

    from harness.sol.globaltimer import EMPTY_NAME, HOLD_NAME, KERNEL_NAME, PTX

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    (tmp_path / "stamp.ptx").write_text(PTX)
    done = subprocess.run([str(ptxas), "-arch=sm_90", str(tmp_path / "stamp.ptx"), "-o", str(tmp_path / "stamp.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    cubin = (tmp_path / "stamp.cubin").read_bytes()
    assert all(name.encode() in cubin for name in (KERNEL_NAME, EMPTY_NAME, HOLD_NAME))  # the entries looked up
