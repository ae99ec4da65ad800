"""Graph replay kernel by kernel (issue 38): the arithmetic and the order it relies on, without a GPU.
The GPU runs it in scripts/gpu_check.sh's `kernel_replay` step."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture
def scripts(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    yield {name: importlib.import_module(name) for name in ("kernel_replay", "launch_shape")}
    for name in ("kernel_replay", "launch_shape", "clock_checks", "ncu_times"):
        sys.modules.pop(name, None)


def test_nodes_come_after_every_node_they_depend_on(scripts):
    order = scripts["launch_shape"].dependency_order
    assert order([1, 2, 3, 4], [(3, 1), (1, 4), (4, 2)]) == [3, 1, 4, 2]  # a chain listed out of order
    assert order([5, 6, 7], [(5, 7), (6, 7)]) == [5, 6, 7]  # a join: ties in the graph's own order
    assert order([8, 9], []) == [8, 9]


def test_only_calls_ncu_saw_as_several_kernels_are_replayed(scripts):
    several = scripts["kernel_replay"].several_kernels
    calls = scripts["kernel_replay"].CALLS_OF_NCU
    assert several({"ncu_kernels": 2 * calls}) and not several({"ncu_kernels": calls})
    assert not several({"ncu_kernels": 2 * calls, "note": "not capturable"}) and not several({})


def test_a_call_reads_the_sum_of_its_kernels_against_ncu_less_its_floor(scripts):
    judge = scripts["kernel_replay"].judge
    row = {"file": "nvfp4_gemm/triton_gemm.py", "shape": "m=128", "ncu_less_floor_us": 14.54, "replay_us": 15.01}
    found = judge(row, [2.10, 12.20])
    assert found["replay_per_kernel_us"] == pytest.approx(14.30) and found["replay_kernels_us"] == [2.10, 12.20]
    assert found["replay_per_kernel_in_band_of_ncu_less_floor"] is True  # 0.24 us apart: inside max(3%, 0.3 us)
    assert judge(row, [2.10, 13.20])["replay_per_kernel_in_band_of_ncu_less_floor"] is False
    failed = judge(row, None, "RuntimeError: the call holds a node that is not a kernel")
    assert failed["replay_per_kernel_us"] is None and failed["replay_per_kernel_in_band_of_ncu_less_floor"] is None
    assert failed["kernel_replay_note"].startswith("RuntimeError")


def test_one_kernel_calls_keep_the_whole_calls_verdict_by_ncus_method(scripts):
    whole = scripts["kernel_replay"].whole
    assert whole({"replay_in_band_of_ncu_less_floor": False, "replay_in_band_of_ncu": True})[
        "replay_in_band_of_ncu_by_method"] is False  # the floor mattered: its verdict
    assert whole({"replay_in_band_of_ncu_less_floor": None, "replay_in_band_of_ncu": True})[
        "replay_in_band_of_ncu_by_method"] is True  # no floor that matters: the raw verdict
    judged = scripts["kernel_replay"].judge({"ncu_less_floor_us": 10.0}, [1.0, 9.1])
    assert judged["replay_in_band_of_ncu_by_method"] is True


def test_the_step_replays_only_calls_of_several_kernels_and_counts_every_row_by_method(scripts, monkeypatch,
                                                                                       tmp_path, capsys):
    """kernel_replay.main on the CPU, the GPU replay faked: what the gpu_check step prints and writes."""
    module = scripts["kernel_replay"]
    calls = module.CALLS_OF_NCU
    rows = [
        {"file": "timing_ladder/triton_ladder.py", "shape": "n=65536 iters=1", "ncu_kernels": calls,
         "replay_in_band_of_ncu": False, "replay_in_band_of_ncu_less_floor": True},
        {"file": "nvfp4_gemm/triton_gemm.py", "shape": "m=128 n=7168 k=2048 l=1", "ncu_kernels": 2 * calls,
         "replay_us": 15.0, "ncu_less_floor_us": 14.3},
        {"file": "nvfp4_gemm/scaled_mm_fp4.py", "shape": "m=128 n=7168 k=2048 l=1", "ncu_kernels": 0,
         "note": "not capturable"},
    ]
    source = tmp_path / "ncu_times.json"
    source.write_text(__import__("json").dumps(rows))
    timed = []

    class Replay:
        def time(self, kernel, inputs):
            timed.append((kernel, inputs))
            return [2.0, 12.2]

    monkeypatch.setattr(module, "KernelReplay", Replay)
    monkeypatch.setattr(module, "load_shipped", lambda path: f"kernel of {path.name}")
    monkeypatch.setattr(module, "shape_inputs", lambda problem, case: [case["k"]])
    monkeypatch.setattr(sys, "argv", ["kernel_replay.py", str(source), str(tmp_path / "out.json")])
    assert module.main() == 0
    assert timed == [("kernel of triton_gemm.py", [2048])]  # only the call of two kernels
    written = __import__("json").loads((tmp_path / "out.json").read_text())
    assert [r.get("replay_in_band_of_ncu_by_method") for r in written] == [True, True, None]
    out = capsys.readouterr().out
    assert "replay by kernel [2.0, 12.2] = 14.2 us, whole 15.0 us, ncu - floor 14.3 us: in band True" in out
    assert "replay ~ ncu by ncu's method (one kernel: the whole call; several: kernel by kernel): 2 of 2 in band" in out
