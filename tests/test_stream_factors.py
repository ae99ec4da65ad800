"""The stream-factor probe's summary (issue 38): a factor's level effects that repeat in every round, told apart
from one that shows none, and the spread of the process medians. Pure arithmetic; the GPU runs the probe."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    yield importlib.import_module("stream_factors")
    for name in ("stream_factors", "cluster_launch_probe", "launch_shape"):
        sys.modules.pop(name, None)


def process(probe, offset_us: float, stream_step_us: float) -> dict:
    """One process's rows: every call 2 us + the process's offset, streams 0-3 lower and 4-7 higher by
    ``stream_step_us`` / 2, placements alike; the empty kernel 1 us + the offset."""
    rows = []
    for rung in probe.RUNGS:
        for round_ in range(probe.ROUNDS):
            for placement in range(probe.PLACEMENTS):
                for stream in range(probe.STREAMS):
                    side = -0.5 if stream < probe.STREAMS // 2 else 0.5
                    rows.append([round_, rung, placement, stream, 2.0 + offset_us + side * stream_step_us])
            rows += [[round_, rung, -1, stream, 1.0 + offset_us] for stream in range(probe.STREAMS)]
    return {"seed": 0, "front": False, "rows": rows}


def test_a_factor_that_repeats_is_told_from_one_that_shows_none(probe):
    effects, noise = probe.level_effects(process(probe, 0.0, 0.1)["rows"], "stream")
    assert effects[0] == pytest.approx(-0.05) and effects[-1] == pytest.approx(0.05) and noise == pytest.approx(0.0)
    effects, noise = probe.level_effects(process(probe, 0.0, 0.1)["rows"], "placement")
    assert all(effect == pytest.approx(0.0) for effect in effects)


def test_the_summary_gives_each_factor_and_the_spread_across_processes(probe):
    lines = probe.summary([process(probe, offset, 0.1) for offset in (0.0, 0.1, 0.2)])
    assert len(lines) == len(probe.RUNGS)
    assert lines[0].startswith("memory: 3 processes, medians sd 0.082 us (2.000-2.200), empty kernel sd 0.082")
    assert "placement level sd 0.000 (round to round 0.000); stream level sd 0.050 (round to round 0.000)" in lines[0]
