"""The fidelity table the GPU step prints for docs/timing.md: every row's clocks, ratios and verdicts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from harness.sol.replay_clock import Reading

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture
def ncu_times(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))  # the script imports its neighbour graph_replay
    spec = importlib.util.spec_from_file_location("ncu_times_script", SCRIPTS / "ncu_times.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("graph_replay", None)


def test_the_band_is_max_of_relative_and_floor(ncu_times):
    assert ncu_times.in_band(2.19, 2.0, 0.03, 0.2) and not ncu_times.in_band(2.21, 2.0, 0.03, 0.2)
    assert ncu_times.in_band(102.9, 100.0, 0.03, 0.2) and not ncu_times.in_band(103.1, 100.0, 0.03, 0.2)
    assert ncu_times.in_band(None, 2.0, 0.03, 0.2) is None and ncu_times.in_band(2.0, None, 0.03, 0.2) is None


def test_the_table_shows_each_clock_ratio_and_verdict_and_counts_them(ncu_times):
    rows = [{"file": "timing_ladder/triton_ladder.py", "shape": "n=65536", "harness_us": 1.85, "graph_us": 2.0,
             "graph_p10_us": 1.9, "graph_p90_us": 2.2, "stamps_us": 1.95, "ncu_us": 2.5,
             "harness_in_band": True, "graph_in_band_of_ncu": False},
            {"file": "nvfp4_gemm/scaled_mm_fp4.py", "shape": "m=1", "harness_us": None, "graph_us": None,
             "ncu_us": None, "harness_in_band": None, "graph_in_band_of_ncu": None, "note": "not loadable"}]
    lines = ncu_times.table(rows)
    assert lines[0].count("|") == lines[1].count("|") == lines[2].count("|") == 11
    assert lines[2] == ("| timing_ladder/triton_ladder.py | n=65536 | 1.85 | 2.00 (1.90-2.20) | 1.95 | 2.50 | "
                        "0.925 | yes | 0.800 | no |")
    assert lines[3] == "| nvfp4_gemm/scaled_mm_fp4.py | m=1 | - | - | - | - | - | - | - | - |"
    assert lines[4] == "harness ~ replay: 1 of 1 in band; replay ~ ncu: 0 of 1; 1 rows lack the harness or replay"


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


def test_a_shape_replay_cannot_time_is_a_row_that_says_why(ncu_times, monkeypatch):
    graph_replay = sys.modules["graph_replay"]
    monkeypatch.setattr(graph_replay, "shape_inputs", lambda problem, case: [case])

    class Clock:
        def time(self, kernel, inputs):
            if kernel == "allocates":
                raise RuntimeError("operation not permitted when stream is capturing\nmore")
            return Reading(2.0, 1.9, 2.2, 1.95, 288)

    assert graph_replay.shape_row(Clock(), "fine", "timing_ladder", {}) == {
        "graph_us": 2.0, "graph_p10_us": 1.9, "graph_p90_us": 2.2, "stamps_us": 1.95, "calls": 288, "note": ""}
    row = graph_replay.shape_row(Clock(), "allocates", "timing_ladder", {})
    assert row == {"graph_us": None,
                   "note": "not capturable: RuntimeError: operation not permitted when stream is capturing"}
