"""scripts/ladder_rungs.py: the ladder copy holding chosen rungs, and the ranked runs' verdict against replay
and what moved across them."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import ladder_rungs


def test_the_ladder_copy_keeps_only_the_named_rungs_readable_by_every_uid(tmp_path, capsys):
    assert ladder_rungs.main(["copy", str(tmp_path), "65536:1", "270336:10"]) == 0
    copy = Path(capsys.readouterr().out.strip())
    spec = yaml.safe_load((copy / "task.yml").read_text())
    assert [(case["n"], case["iters"]) for case in spec["benchmarks"]] == [(65536, 1), (270336, 10)]
    shipped = yaml.safe_load((ladder_rungs.ROOT / "problems" / "timing_ladder" / "task.yml").read_text())
    assert spec["tests"] == shipped["tests"] and len(shipped["benchmarks"]) == 12
    for path in [tmp_path, copy, copy / "task.yml", copy / "reference.py"]:
        assert path.stat().st_mode & stat.S_IROTH, path  # the worker runs as uid 65534


def test_an_unknown_command_prints_the_usage(capsys):
    assert ladder_rungs.main(["sumary"]) == 2
    assert "ladder_rungs.py copy FOLDER N:ITERS" in capsys.readouterr().err


def _run(median_us: float, overhead_us: float | None) -> dict:
    case = {"kind": "benchmark", "case": {"n": 65536, "iters": 1, "seed": 9}, "timing": {"median_us": median_us},
            "event_overhead_us": overhead_us}
    return {"cases": [{"kind": "test", "case": {"n": 1024, "iters": 1, "seed": 1}}, case]}


def test_each_rung_gets_its_in_band_count_and_its_spreads_across_runs():
    # Raw event times 3.90, 3.90, 3.95 with overheads 2.10, 2.30, 2.20: the overhead moves on its own,
    # so the medians spread more than the raw times.
    rows = ladder_rungs.rung_rows([_run(1.80, 2.10), _run(1.60, 2.30), _run(1.75, 2.20)])
    assert list(rows) == ["n=65536 iters=1"] and rows["n=65536 iters=1"]["case"]["seed"] == 9
    assert [run["raw_us"] for run in rows["n=65536 iters=1"]["runs"]] == pytest.approx([3.90, 3.90, 3.95])
    (line,) = ladder_rungs.summary_lines(rows, {"n=65536 iters=1": 1.82})
    assert line.startswith("n=65536 iters=1: 3 runs, medians 1.80 1.60 1.75; replay 1.82 us, 2 of 3 inside")
    assert line.endswith("sd across runs: median 0.104, overhead 0.100, raw events 0.029 (overhead ~ raw correlation "
                         "0.00)")
    (line,) = ladder_rungs.summary_lines(ladder_rungs.rung_rows([_run(1.80, 2.10), _run(1.80, 2.30), _run(1.75, 2.20)]))
    assert line.endswith("raw events 0.104 (overhead ~ raw correlation 0.96)")  # an overhead that moves with the raw


def test_without_replay_or_overheads_the_line_says_what_it_can():
    (line,) = ladder_rungs.summary_lines(ladder_rungs.rung_rows([_run(1.80, None)]))
    assert line == "n=65536 iters=1: 1 runs, medians 1.80; sd across runs: median -, overhead -, raw events -"
