"""The fidelity table the GPU step prints for docs/timing.md: every row's clocks, ratios and verdicts."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from harness.sol.replay_clock import Floors, Reading

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
             "replay_p10_us": 1.7, "replay_p90_us": 2.1, "stream_us": 1.90, "ncu_us": 2.74, "ncu_kernels": 5},
            {"file": "nvfp4_gemm/triton_gemm.py", "shape": "m=128", "harness_us": 142.08, "replay_us": 139.84,
             "replay_p10_us": 139.0, "replay_p90_us": 141.0, "stream_us": 146.5, "ncu_us": 142.82, "ncu_kernels": 10},
            {"file": "nvfp4_gemm/scaled_mm_fp4.py", "shape": "m=1", "harness_us": None, "replay_us": None,
             "ncu_us": None, "ncu_kernels": 0, "note": "not loadable"}]
    for row in rows:
        ncu_times.judge(row, floor)
    assert rows[0]["ncu_less_floor_us"] == pytest.approx(1.77) and rows[1]["ncu_less_floor_us"] == pytest.approx(140.88)
    lines = ncu_times.table(rows)
    assert all(line.count("|") == 15 for line in lines[:5])
    assert lines[2] == ("| timing_ladder/triton_ladder.py | n=65536 | 1.85 | 1.88 (1.70-2.10) | 2.74 | 1.77 | "
                        "0.984 | yes | 1.90 | yes | 0.686 | no | 1.062 | yes |")
    assert lines[3] == ("| nvfp4_gemm/triton_gemm.py | m=128 | 142.08 | 139.84 (139.00-141.00) | 142.82 | 140.88 | "
                        "1.016 | yes | 146.50 | no | 0.979 | yes | 0.993 | yes |")  # 4.42 us off the stream: > 3%
    assert lines[4] == "| nvfp4_gemm/scaled_mm_fp4.py | m=1 | - | - | - | - | - | - | - | - | - | - | - | - |"
    assert lines[5] == ("harness ~ replay: 2 of 2 in band; harness ~ stream: 1 of 2 in band; replay ~ ncu: 1 of 2 in "
                        "band; replay ~ ncu - floor: 2 of 2 in band; 1 rows lack the harness or replay")


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


def test_a_shape_a_clock_cannot_time_is_a_row_that_says_why_beside_the_other_clocks(scripts, monkeypatch):
    graph_replay = scripts["graph_replay"]
    monkeypatch.setattr(graph_replay, "shape_inputs", lambda problem, case: [case])

    class Clock:
        def __init__(self, captures: bool, us: float) -> None:
            self.captures, self.us = captures, us

        def time(self, kernel, inputs):
            if kernel == "allocates" and not self.captures:
                raise RuntimeError("operation not permitted when stream is capturing\nmore")
            return Reading(self.us, self.us - 0.1, self.us + 0.2, 288, 1.1, self.us - 0.05)

    clocks = {"replay": Clock(False, 2.0), "stream": Clock(True, 3.0)}
    aligned = {"stream": 0.5}  # the stream replay's empty kernel less the graph's: off every stream figure
    assert graph_replay.shape_row(clocks, "fine", "timing_ladder", {}, aligned) == {
        "replay_us": 2.0, "replay_p10_us": 1.9, "replay_p90_us": 2.2, "replay_floor_us": 1.1, "note": "",
        "replay_median_us": 1.95, "stream_us": 2.5, "stream_p10_us": pytest.approx(2.4),
        "stream_p90_us": pytest.approx(2.7), "stream_floor_us": 1.1, "stream_note": "",
        "stream_median_us": pytest.approx(2.45), "stream_raw_us": 3.0, "calls": 288}
    row = graph_replay.shape_row(clocks, "allocates", "timing_ladder", {}, aligned)  # a graph refuses it, a stream not
    assert row["replay_us"] is None and row["stream_us"] == 2.5 and row["stream_note"] == ""
    assert row["note"] == "not capturable: RuntimeError: operation not permitted when stream is capturing"
    clocks["stream"].captures = False
    row = graph_replay.shape_row(clocks, "allocates", "timing_ladder", {}, aligned)
    assert row["stream_note"].startswith("not timed on a stream: RuntimeError") and row["stream_us"] is None


def test_the_ncu_step_measures_its_floor_and_prints_every_verdict(ncu_times, monkeypatch, tmp_path, capsys):
    """ncu_times.main end to end on the CPU, ncu's output faked: the floor from the replay's floors file,
    each file's kernels split by shape, the ladder and its two-kernel row judged."""
    shape = "n=270336 iters=10"
    replay = tmp_path / "graph_replay.json"
    replay.write_text(json.dumps([
        {"file": "timing_ladder/triton_ladder.py", "shape": shape, "harness_us": 2.28, "replay_us": 2.17,
         "stream_us": 2.30},
        {"file": "timing_ladder/triton_ladder_twice.py", "shape": shape, "harness_us": 6.52, "replay_us": 4.34,
         "stream_us": 6.55},
        {"file": "nvfp4_gemm/scaled_mm_fp4.py", "shape": "m=1", "replay_us": None, "note": "not capturable"}]))
    (tmp_path / "graph_replay_floors.json").write_text(json.dumps({"nothing_us": 1.13, "empty_us": 2.26,
                                                                   "empty_kernel_us": 1.13}))
    calls = ncu_times.CALLS

    def profile(label, target_args):
        if target_args[0] == "--floors":
            return _ncu_csv([("empty", "ns", "2,100")] * 2 + [("stamp", "ns", "2,050")])
        per_call = 2 if target_args[0].endswith("twice.py") else 1
        return _ncu_csv([("stamp", "ns", "1,000")] + [("_ladder", "ns", "3,110")] * (per_call * calls))

    monkeypatch.setattr(ncu_times, "profile", profile)
    monkeypatch.setattr(sys, "argv", ["ncu_times.py", str(replay), str(tmp_path / "ncu_times.json")])
    assert ncu_times.main() == 0
    rows = json.loads((tmp_path / "ncu_times.json").read_text())
    assert [r["ncu_kernels"] for r in rows] == [calls, 2 * calls, 0]
    assert rows[0]["ncu_less_floor_us"] == pytest.approx(3.11 - 0.97)
    assert rows[1]["ncu_less_floor_us"] == pytest.approx(6.22 - 2 * 0.97)
    text = (tmp_path / "ncu_times.md").read_text()
    assert "ncu charges each kernel +0.97 us more" in text and "cannot hold below 32 us" in text
    assert [r["harness_in_band_stream"] for r in rows] == [True, True, None]
    assert (f"second launch {shape}: harness +1.96, replay +0.00, stream +1.95, ncu +0.00 us (twice - 2 x once): "
            "stream gap") in text and "stream as harness: yes" in text
    assert "second launch, every compute rung (1 of 1 with both clocks): stream gap" in text
    assert "second launch by the stream replay: within 0.3 us of the harness's on 1 of 1 rungs" in text
    assert "ncu: empty kernel 2.10 us, stamp kernel 2.05 us" in capsys.readouterr().out


def test_the_fidelity_step_writes_the_floors_and_the_rows_and_prints_the_second_launch(scripts, monkeypatch,
                                                                                      tmp_path, capsys):
    """graph_replay.main on the CPU with the replay clock faked: what the ncu step then reads."""
    graph_replay = scripts["graph_replay"]
    once, twice = "submissions/timing_ladder/triton_ladder.py", "submissions/timing_ladder/triton_ladder_twice.py"

    class Clock:
        def __init__(self, flush=None, stream=False):
            self.flush, self.stream = flush or "reading flush", stream

        def floors(self):
            return Floors(1.13, 3.3, 32) if self.stream else Floors(1.13, 2.26, 32)

        def time(self, kernel, inputs):
            if self.stream:  # 1.04 us more than the graph a call, and the second launch's stream gap
                return Reading(3.21 if kernel == once else 7.56, 3.0, 7.7, 288)
            return Reading(2.17 if kernel == once else 4.34, 2.0, 4.5, 288)

    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    monkeypatch.setattr(graph_replay, "ReplayClock", Clock)
    monkeypatch.setattr(graph_replay, "load_shipped", str)
    monkeypatch.setattr(graph_replay, "shape_inputs", lambda problem, case: [])
    monkeypatch.setattr(graph_replay, "harness_medians", lambda path, eval_dir, missing: {
        "n=270336 iters=10": (2.28 if str(path) == once else 6.52, 2.2)})
    monkeypatch.setattr(sys, "argv", ["graph_replay.py", str(tmp_path / "graph_replay.json"), str(eval_dir),
                                      once, twice])
    assert graph_replay.main() == 0
    floors = json.loads((tmp_path / "graph_replay_floors.json").read_text())
    assert floors == {"nothing_us": 1.13, "empty_us": 2.26, "tick_ns": 32, "empty_kernel_us": pytest.approx(1.13),
                      "stream_alignment_us": pytest.approx(1.04)}
    rows = json.loads((tmp_path / "graph_replay.json").read_text())
    assert len(rows) == 24 and {r["file"] for r in rows} == {"timing_ladder/triton_ladder.py",
                                                             "timing_ladder/triton_ladder_twice.py"}
    out = capsys.readouterr().out
    judged = {r["file"]: (r["harness_in_band"], r["harness_in_band_stream"]) for r in rows if r["harness_us"]}
    assert judged == {"timing_ladder/triton_ladder.py": (True, True),
                      "timing_ladder/triton_ladder_twice.py": (False, True)}
    assert all(r["stream_note"] == "" and r["calls"] == 288 for r in rows)
    assert ("stream replay floors: nothing_us 1.13, empty_us 3.30, empty_kernel_us 2.17; aligned to the graph's "
            "one-kernel charge: 1.04 us off every stream reading") in out
    assert sorted({round(r["stream_us"], 2) for r in rows}) == [2.17, 6.52]
    assert ("fidelity: 1 of 2 rows with the harness and the graph replay inside max(3%, 0.2 us) (22 rows lack one); "
            "2 of 2 rows with the harness and the stream replay inside max(3%, 0.2 us) (22 rows lack one)") in out
    assert "second launch n=270336 iters=10: harness +1.96, replay +0.00, stream +2.18, ncu - us" in out
    assert "second launch, every compute rung (1 of 6 with both clocks): stream gap" in out
    assert "second launch by the stream replay: within 0.3 us of the harness's on 1 of 1 rungs" in out
