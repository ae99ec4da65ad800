"""The fidelity table the GPU step prints for docs/timing.md: every row's clocks, ratios and verdicts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from harness.sol.replay_clock import Reading

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


SCRIPT_MODULES = ("ncu_times", "graph_replay", "clock_checks")


@pytest.fixture
def scripts(monkeypatch):
    """The fidelity step's scripts, imported as the GPU step runs them (each imports its neighbours)."""
    monkeypatch.syspath_prepend(str(SCRIPTS))
    yield {name: importlib.import_module(name) for name in SCRIPT_MODULES}
    for name in SCRIPT_MODULES:
        sys.modules.pop(name, None)


@pytest.fixture
def ncu_times(scripts):
    return scripts["ncu_times"]


def test_the_band_is_max_of_relative_and_floor(ncu_times):
    assert ncu_times.in_band(2.19, 2.0, 0.03, 0.2) and not ncu_times.in_band(2.21, 2.0, 0.03, 0.2)
    assert ncu_times.in_band(102.9, 100.0, 0.03, 0.2) and not ncu_times.in_band(103.1, 100.0, 0.03, 0.2)
    assert ncu_times.in_band(None, 2.0, 0.03, 0.2) is None and ncu_times.in_band(2.0, None, 0.03, 0.2) is None


def test_the_table_shows_each_clock_ratio_and_verdict_and_counts_them(ncu_times):
    floor = ncu_times.NcuFloor(ncu_empty_us=2.10, replay_empty_us=1.13)  # ncu charges 0.97 us more a kernel
    rows = [{"file": "timing_ladder/triton_ladder.py", "shape": "n=65536", "harness_us": 1.85, "replay_us": 1.88,
             "replay_p10_us": 1.7, "replay_p90_us": 2.1, "ncu_us": 2.74, "ncu_kernels": 5},
            {"file": "nvfp4_gemm/triton_gemm.py", "shape": "m=128", "harness_us": 142.08, "replay_us": 139.84,
             "replay_p10_us": 139.0, "replay_p90_us": 141.0, "ncu_us": 142.82, "ncu_kernels": 10},
            {"file": "nvfp4_gemm/scaled_mm_fp4.py", "shape": "m=1", "harness_us": None, "replay_us": None,
             "ncu_us": None, "ncu_kernels": 0, "note": "not loadable"}]
    for row in rows:
        ncu_times.judge(row, floor)
    assert rows[0]["ncu_less_floor_us"] == pytest.approx(1.77) and rows[1]["ncu_less_floor_us"] == pytest.approx(140.88)
    lines = ncu_times.table(rows)
    assert all(line.count("|") == 13 for line in lines[:5])
    assert lines[2] == ("| timing_ladder/triton_ladder.py | n=65536 | 1.85 | 1.88 (1.70-2.10) | 2.74 | 1.77 | "
                        "0.984 | yes | 0.686 | no | 1.062 | yes |")
    assert lines[3] == ("| nvfp4_gemm/triton_gemm.py | m=128 | 142.08 | 139.84 (139.00-141.00) | 142.82 | 140.88 | "
                        "1.016 | yes | 0.979 | yes | 0.993 | yes |")
    assert lines[4] == "| nvfp4_gemm/scaled_mm_fp4.py | m=1 | - | - | - | - | - | - | - | - | - | - |"
    assert lines[5] == ("harness ~ replay: 2 of 2 in band; replay ~ ncu: 1 of 2 in band; replay ~ ncu - floor: 2 of 2 "
                        "in band; 1 rows lack the harness or replay")


def test_a_floor_inside_the_band_leaves_raw_ncu_the_only_comparison(ncu_times):
    row = {"file": "f", "shape": "s", "harness_us": 2.0, "replay_us": 2.0, "ncu_us": 2.2, "ncu_kernels": 5}
    ncu_times.judge(row, ncu_times.NcuFloor(ncu_empty_us=1.3, replay_empty_us=1.13))
    assert row["ncu_less_floor_us"] is None and row["replay_in_band_of_ncu_less_floor"] is None
    assert row["replay_in_band_of_ncu"] is True
    ncu_times.judge(row, None)  # no floor measured (the flush step's rows): no column either
    assert row["ncu_less_floor_us"] is None


def _ncu_csv(kernels: list[tuple[str, str, str]]) -> str:
    """ncu --csv --print-units base output: a preamble, then one row per kernel and metric."""
    head = '"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
    body = "".join(f'"{i}","7","{name}","gpu__time_duration.sum","{unit}","{value}"\n'
                   for i, (name, unit, value) in enumerate(kernels))
    return "==PROF== Connected to process 7\n" + head + body


def test_one_ncu_run_is_split_into_shapes_by_the_marker_kernel(ncu_times):
    text = _ncu_csv([("stamp", "nsecond", "1,024"), ("ladder_kernel", "nsecond", "2,000"),
                     ("ladder_kernel", "usecond", "2.5"), ("stamp", "nsecond", "990"),
                     ("predecode", "nsecond", "1,500"), ("gemm(int)", "nsecond", "20,000"), ("stamp()", "ns", "1")])
    assert ncu_times.durations_by_case_us(text, 4) == [[2.0, 2.5], [1.5, 20.0], [], []]
    assert ncu_times.durations_by_case_us("no profile", 2) == [[], []]  # ncu died: every shape has no time
    assert not ncu_times.is_marker("stamp_kernel") and ncu_times.is_marker("stamp")


def test_the_floor_run_is_split_by_kernel_name(ncu_times):
    text = _ncu_csv([("empty", "nsecond", "2,080"), ("empty()", "usecond", "2.12"),
                     ("stamp(unsigned long)", "ns", "2,300")])
    found = ncu_times.durations_by_name_us(text)
    assert found == {"empty": [pytest.approx(2.08), pytest.approx(2.12)], "stamp": [pytest.approx(2.3)]}


def test_a_shape_replay_cannot_time_is_a_row_that_says_why(scripts, monkeypatch):
    graph_replay = scripts["graph_replay"]
    monkeypatch.setattr(graph_replay, "shape_inputs", lambda problem, case: [case])

    class Clock:
        def time(self, kernel, inputs):
            if kernel == "allocates":
                raise RuntimeError("operation not permitted when stream is capturing\nmore")
            return Reading(2.0, 1.9, 2.2, 288)

    assert graph_replay.shape_row(Clock(), "fine", "timing_ladder", {}) == {
        "replay_us": 2.0, "replay_p10_us": 1.9, "replay_p90_us": 2.2, "calls": 288, "note": ""}
    row = graph_replay.shape_row(Clock(), "allocates", "timing_ladder", {})
    assert row == {"replay_us": None,
                   "note": "not capturable: RuntimeError: operation not permitted when stream is capturing"}
