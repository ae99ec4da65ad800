"""scripts/tune_nvfp4.py on the CPU: its grid names only keys the submissions take; no GPU, one line."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")


def _tune_module():
    spec = importlib.util.spec_from_file_location("tune_nvfp4", ROOT / "scripts" / "tune_nvfp4.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_grid_key_is_a_configuration_key_of_its_file() -> None:
    from harness.sol.replay_clock import load_shipped

    tune = _tune_module()
    for problem, (path, entry) in tune.FILES.items():
        kernel = load_shipped(ROOT / path)
        accepted = set(kernel.__globals__["DEFAULT_CONFIG"]) | {"split_k"}
        assert callable(kernel.__globals__[entry])
        for config in tune.GRID[problem]:
            assert set(config) <= accepted, f"{problem}: {config} names keys outside {sorted(accepted)}"


def test_without_a_gpu_it_says_so_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "scripts/tune_nvfp4.py", str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "tune_nvfp4: needs a CUDA GPU (run it through scripts/gpu_check.sh tune_nvfp4)"
    ]
    assert not (tmp_path / "out.json").exists()


class SimGPU:
    """A one-stream GPU timeline in us: an eager launch starts once the host has issued it and the GPU
    is free; inside ``torch.cuda.graph`` work is recorded, and a replay runs it back to back."""

    LAUNCH_US = 4.0  # the host's cost to issue one eager launch
    STAMP_US = 1.0  # a stamp kernel's own duration; it writes the timer half-way

    def __init__(self) -> None:
        self.host_us = 0.0
        self.free_us = 0.0
        self.recording: list | None = None

    def submit(self, op) -> None:
        """``op(t)`` runs at GPU time t and returns its duration."""
        if self.recording is not None:
            self.recording.append(op)
            return
        self.host_us += self.LAUNCH_US
        start = max(self.host_us, self.free_us)
        self.free_us = start + op(start)

    def kernel(self, us: float) -> None:
        self.submit(lambda t: us)

    def synchronize(self) -> None:
        self.host_us = max(self.host_us, self.free_us)

    def patch(self, monkeypatch) -> None:
        """torch.cuda's stream, event, graph and sleep calls, and the %globaltimer stamper, on this timeline."""
        import contextlib

        import torch

        sim = self

        class Event:
            def __init__(self, **_: object) -> None:
                self.at_us = math.nan

            def record(self) -> None:
                sim.submit(lambda t: setattr(self, "at_us", t) or 0.0)

            def elapsed_time(self, end: Event) -> float:
                return (end.at_us - self.at_us) / 1e3

        class Graph:
            def __init__(self) -> None:
                self.ops: list = []

            def replay(self) -> None:
                sim.host_us += sim.LAUNCH_US
                t = max(sim.host_us, sim.free_us)
                for op in self.ops:
                    t += op(t)
                sim.free_us = t

        @contextlib.contextmanager
        def graph(g: Graph):
            sim.recording = g.ops
            try:
                yield
            finally:
                sim.recording = None

        class Stamper:
            def __init__(self, slots: int) -> None:
                self.slots = [0] * slots

            def mark(self, index: int) -> None:
                sim.submit(lambda t: self.slots.__setitem__(index, round((t + sim.STAMP_US / 2) * 1e3)) or sim.STAMP_US)

            def empty(self) -> None:
                sim.kernel(0.5)

            def read(self) -> list[int]:
                return list(self.slots)

        monkeypatch.setattr(torch.cuda, "Event", Event)
        monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
        monkeypatch.setattr(torch.cuda, "graph", graph)
        monkeypatch.setattr(torch.cuda, "Stream", lambda: None)
        monkeypatch.setattr(torch.cuda, "stream", lambda _: contextlib.nullcontext())
        monkeypatch.setattr(torch.cuda, "synchronize", self.synchronize)
        monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: self.kernel(0.5))
        monkeypatch.setattr("harness.sol.globaltimer.Stamper", Stamper)


class FakeReference:
    """check_implementation of a problem: the output must be the input's ``answer``."""

    @staticmethod
    def check_implementation(data: dict, output: object, expected: object) -> tuple[bool, str]:
        return (output == expected, "" if output == expected else f"got {output}, expected {expected}")


def _fake_entry(sim: SimGPU):
    """A wrapper that spends ``host_us`` on the host, then launches one kernel of the shape's ``device_us``."""

    def entry(data: dict, host_us: float = 0.0, wrong: bool = False) -> object:
        sim.host_us += host_us
        sim.kernel(data["device_us"])
        return "wrong" if wrong else data["answer"]

    return entry


def _shapes(device_us: list[float], sol_us: list[float]) -> list:
    return [({"m": i, "seed": 1}, sol, [{"device_us": us, "answer": i}] * 4, i)
            for i, (us, sol) in enumerate(zip(device_us, sol_us))]


def test_host_time_of_the_wrapper_never_enters_a_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    tune, sim = _tune_module(), SimGPU()
    sim.patch(monkeypatch)
    clock = tune.new_clock(flush=lambda: sim.kernel(35.0))
    entry, shapes = _fake_entry(sim), _shapes([5.0, 120.0], [2.5, 60.0])
    for host_us in (0.0, 20_000.0):  # a 20 ms host-side sleep in the wrapper
        result = tune.run_config(entry, {"host_us": host_us}, shapes, FakeReference, clock)
        rows = result["shapes"]
        assert [row["us"] for row in rows] == [5.0, 120.0], host_us
        assert [(row["p10_us"], row["p90_us"]) for row in rows] == [(5.0, 5.0), (120.0, 120.0)], host_us
        assert [row["pct_sol"] for row in rows] == [50.0, 50.0]
        assert result["geomean_pct_sol"] == 50.0
    assert rows[0]["calls"] == 32 * 9  # every call of 9 replays of a graph of 32


def test_the_simulated_gpu_shows_host_time_to_an_eager_event_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: the clock the tune replaced (events around an eager call) reads the sleep."""
    import torch

    sim = SimGPU()
    sim.patch(monkeypatch)
    entry = _fake_entry(sim)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    entry({"device_us": 5.0, "answer": 0}, host_us=20_000.0)
    end.record()
    torch.cuda.synchronize()
    assert start.elapsed_time(end) * 1e3 > 20_000.0


def test_a_failed_check_or_a_non_positive_time_leaves_no_geomean(monkeypatch: pytest.MonkeyPatch) -> None:
    tune, sim = _tune_module(), SimGPU()
    sim.patch(monkeypatch)
    clock = tune.new_clock(flush=lambda: sim.kernel(35.0))
    entry = _fake_entry(sim)
    wrong = tune.run_config(entry, {"wrong": True}, _shapes([5.0], [2.5]), FakeReference, clock)
    assert wrong["geomean_pct_sol"] is None and "us" not in wrong["shapes"][0]
    assert wrong["shapes"][0]["message"] == "got wrong, expected 0"
    empty = tune.run_config(entry, {}, _shapes([0.0, 10.0], [1.0, 5.0]), FakeReference, clock)
    assert empty["geomean_pct_sol"] is None
    assert empty["shapes"][0]["message"] == "the stamps read 0.000 us: no time to rank"
    assert empty["shapes"][1]["pct_sol"] == 50.0


def test_geomean_of_two_shapes() -> None:
    tune = _tune_module()
    rows = [{"check": True, "us": 10.0, "sol_us": 8.0}, {"check": True, "us": 50.0, "sol_us": 10.0}]
    assert tune.geomean_pct(rows) == 40.0  # sqrt(0.8 * 0.2)
