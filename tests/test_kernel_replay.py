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
    for name in ("kernel_replay", "launch_shape", "clock_checks"):
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
