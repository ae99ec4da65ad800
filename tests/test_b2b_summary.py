"""scripts/b2b_summary.py: the back-to-back ranked runs' verdict against replay and what moved across them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import b2b_summary
import pytest


def _run(median_us: float, overhead_us: float | None) -> dict:
    case = {"kind": "benchmark", "case": {"n": 65536, "iters": 1, "seed": 9}, "timing": {"median_us": median_us},
            "event_overhead_us": overhead_us}
    return {"cases": [{"kind": "test", "case": {"n": 1024, "iters": 1, "seed": 1}}, case]}


def test_each_rung_gets_its_in_band_count_and_its_spreads_across_runs():
    # Raw event times 3.90, 3.90, 3.95 with overheads 2.10, 2.30, 2.20: the overhead moves on its own,
    # so the medians spread more than the raw times.
    rows = b2b_summary.rung_rows([_run(1.80, 2.10), _run(1.60, 2.30), _run(1.75, 2.20)])
    assert list(rows) == ["n=65536 iters=1"] and rows["n=65536 iters=1"]["case"]["seed"] == 9
    assert [run["raw_us"] for run in rows["n=65536 iters=1"]["runs"]] == pytest.approx([3.90, 3.90, 3.95])
    (line,) = b2b_summary.summary_lines(rows, {"n=65536 iters=1": 1.82})
    assert line.startswith("n=65536 iters=1: 3 runs, medians 1.80 1.60 1.75; replay 1.82 us, 2 of 3 inside")
    assert line.endswith("sd across runs: median 0.104, overhead 0.100, raw events 0.029 (overhead ~ raw correlation "
                         "0.00)")
    (line,) = b2b_summary.summary_lines(b2b_summary.rung_rows([_run(1.80, 2.10), _run(1.80, 2.30), _run(1.75, 2.20)]))
    assert line.endswith("raw events 0.104 (overhead ~ raw correlation 0.96)")  # an overhead that moves with the raw


def test_without_replay_or_overheads_the_line_says_what_it_can():
    (line,) = b2b_summary.summary_lines(b2b_summary.rung_rows([_run(1.80, None)]))
    assert line == "n=65536 iters=1: 1 runs, medians 1.80; sd across runs: median -, overhead -, raw events -"
