"""scripts/run_summary.py: one line per benchmark case, with what moves a short median by process beside it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location("run_summary_script",
                                               Path(__file__).resolve().parent.parent / "scripts" / "run_summary.py")
run_summary = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(run_summary)  # a script beside the GPU step's others, not a package module


def _result(**case_fields) -> dict:
    timing = {"median_us": 1.738, "runs": 200, "method": "cuda-event per call in compiled code, ..."}
    return {"problem": "timing_ladder", "submission_path": "submissions/timing_ladder/triton_ladder.py",
            "mode": "leaderboard", "status": "passed", "exit_code": 0, "rankable": True,
            "cases": [{"kind": "test", "case": {"n": 1024}}, {"kind": "benchmark", "case": {"n": 65536, "iters": 1,
                       "seed": 7}, "timing": timing, "overhead_ms": 2.98, **case_fields}]}


def test_a_sealed_case_shows_its_event_overhead_and_second_clock():
    lines = run_summary.summary_lines(_result(event_overhead_us=2.1335, second_clock_us=7.68))
    assert lines[1] == ("  n=65536 iters=1: median 1.74 us over 200 calls, sealed, harness 3.0 ms/call, "
                        "event overhead 2.134 us, second clock 7.680 us")


def test_a_run_without_the_core_shows_neither():
    result = _result()
    result["cases"][1]["timing"]["method"] = "cuda-event per call, L2 flushed, queued sleep"
    assert run_summary.summary_lines(result)[1].endswith("NOT sealed, harness 3.0 ms/call")
