"""The launch-cost probe's decisions (issue 38): which figures hold, refute or leave open each cause of
cuBLAS's fp8 call costing a stream more than a graph. Pure arithmetic; the GPU runs the probe."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    yield importlib.import_module("cluster_launch_probe")
    sys.modules.pop("cluster_launch_probe", None)


def rows(probe, spin_excess: dict[str, float], vendor_excess: float, long_sleep: float = 0.0) -> dict[str, dict]:
    """Every variant's eager-less-graph: 1.0 us, plus its excess (spins: by hypothesis; cuBLAS: over Triton)."""
    found = {spin.name: 1.0 for spin in probe.spins()}
    for hypothesis, pairs in probe.HYPOTHESES.items():
        for variant, _ in pairs:
            found[variant.name] += spin_excess.get(hypothesis, 0.0)
    vendor, control = (f"{probe.FILES[0]} shape", f"{probe.FILES[1]} shape")
    for index in range(probe.SHAPES):
        found[f"{vendor} {index}"], found[f"{control} {index}"] = 1.0 + vendor_excess, 1.0
    found[f"{vendor} 0, a long sleep"] = 1.0 + vendor_excess + long_sleep
    found[f"{vendor} 0, no flush"] = found[f"{control} 0, no flush"] = 1.0
    return {name: {"eager_less_graph_us": value} for name, value in found.items()}


def verdicts(lines: list[str]) -> dict[str, str]:
    return {line.split(": ")[0]: line.split(": ")[1] for line in lines if line.startswith(("cluster: ", "parameters: "))
            and line.count(": ") == 1}


def test_each_hypothesis_is_held_refuted_or_left_open_by_its_own_variants(probe):
    lines = probe.decide(rows(probe, {"cluster": 0.05, "parameters": 0.8}, vendor_excess=0.9))
    assert verdicts(lines) == {"cluster": "refuted", "parameters": "held"}
    assert lines[0] == (f"{probe.FILES[0]} shape 0: eager beyond a graph's +0.90 us more than "
                        f"{probe.FILES[1]} shape 0's")
    assert any(line.startswith("parameters: spin, 1 CTAs a cluster, 4096 B of parameters, one cluster, no spin, "
                               "128 threads: +0.80 us beyond spin, 1 CTAs a cluster, 8 B") for line in lines)
    assert lines[-1].endswith("+0.00 us beyond the usual sleep's excess: refuted")


def test_spins_launched_as_the_two_files_kernels_decide_the_launch_shape(probe):
    found = rows(probe, {}, vendor_excess=0.9)
    found[f"{probe.MIMIC}cuBLAS's kernel: spin"] = {"eager_less_graph_us": 1.85}
    found[f"{probe.MIMIC}Triton's kernel: spin"] = {"eager_less_graph_us": 1.0}
    lines = probe.decide(found)
    mimics = f"{probe.MIMIC}cuBLAS's kernel: spin: +0.85 us beyond {probe.MIMIC}Triton's kernel: spin"
    assert f"launch shape: {mimics}" in lines
    assert "launch shape: held" in lines


def test_outputs_that_move_the_eager_cost_hold_placement_and_outputs_that_stay_test_nothing(probe):
    found = rows(probe, {}, vendor_excess=0.9)
    base = f"{probe.FILES[0]} shape 0"
    for pool, value in zip(range(1, 4), (1.9, 1.0, 1.0)):
        found[f"{base}, outputs in fresh pool {pool}"] = {"eager_less_graph_us": value,
                                                          "output_addresses": [pool << 21]}
    lines = probe.decide(found)
    moved = f"placement: {base}: eager beyond a graph's +1.90, +1.90, +1.00, +1.00 us (its own outputs, then 3"
    assert moved in "\n".join(lines)
    assert "placement: held" in lines
    for pool in range(1, 4):  # the same addresses in every pool: the test did not move anything
        found[f"{base}, outputs in fresh pool {pool}"]["output_addresses"] = [1 << 21]
    assert "placement: untested (the outputs did not move)" in probe.decide(found)


def test_an_excess_that_goes_without_the_flush_holds_the_flush(probe):
    """rows(): every call 1.0 us eager beyond its graph, cuBLAS's 0.9 more; unflushed both 1.0."""
    found = rows(probe, {}, vendor_excess=0.9)
    for name in found:  # the shared 1.0 us moved to the launch itself: cuBLAS's excess alone stays
        found[name]["eager_less_graph_us"] -= 1.0
    lines = probe.decide(found)
    assert f"flush: {probe.FILES[0]} shape 0: eager beyond a graph's +0.90 us behind the flush, +0.00 without" in lines
    assert "flush: held" in lines
    found[f"{probe.FILES[0]} shape 0, no flush"]["eager_less_graph_us"] = 0.8
    assert "flush: refuted" in probe.decide(found)
    found[f"{probe.FILES[0]} shape 0"]["eager_less_graph_us"] = 0.1
    assert "flush: untested (no call had the excess)" in probe.decide(found)


def test_a_spin_like_a_kernel_takes_its_blocks_threads_cluster_and_parameter_bytes(probe):
    from launch_shape import LaunchShape

    spin = probe.Spin.like(LaunchShape("nvjet", blocks=68, threads=384, shared_bytes=200_000, param_bytes=1001,
                                       cluster=4))
    assert (spin.cluster, spin.blocks, spin.threads, spin.ns) == (4, 68, 384, 20_000)
    assert spin.blob == 1000 and spin.blob % 8 == 0  # 8 bytes of ns, then the rest rounded up to 8
    assert f".entry {spin.entry}(.param .u64 ns, .param .align 8 .b8 blob[1000]) .reqnctapercluster 4, 1, 1" in (
        probe.spin_ptx([spin]))


def test_a_cause_the_vendor_does_not_show_is_open_and_a_host_pace_is_not_refuted(probe):
    lines = probe.decide(rows(probe, {"cluster": 0.6, "parameters": 0.6}, vendor_excess=0.1, long_sleep=-0.9))
    assert verdicts(lines) == {"cluster": "open", "parameters": "open"}
    assert lines[-1].endswith("-0.90 us beyond the usual sleep's excess: open")


def test_the_spin_kernels_declare_their_clusters_and_parameter_blocks(probe):
    ptx = probe.spin_ptx()
    assert ".target sm_90" in ptx and ptx.count(".visible .entry spin_") == len({s.entry for s in probe.spins()})
    assert ".entry spin_c1_p0(.param .u64 ns)\n" in ptx
    assert ".entry spin_c4_p0(.param .u64 ns) .reqnctapercluster 4, 1, 1\n" in ptx
    assert ".entry spin_c1_p4088(.param .u64 ns, .param .align 8 .b8 blob[4088])\n" in ptx


def test_a_kernels_parameter_block_ends_at_its_last_parameter(probe):
    """launch_shape._param_bytes walks the driver's parameter info until it refuses an index."""
    import ctypes

    import launch_shape

    layout = [(0, 8), (8, 8), (16, 1024), (1040, 4)]  # offsets and sizes, as cuKernelGetParamInfo reports them

    def info(handle, index, offset, size):
        if index.value >= len(layout):
            return 1  # CUDA_ERROR_INVALID_VALUE: no such parameter
        offset._obj.value, size._obj.value = layout[index.value]  # byref() arguments: write through them
        return 0

    class Driver:
        cuKernelGetParamInfo = cuFuncGetParamInfo = staticmethod(info)

    assert launch_shape._param_bytes(Driver(), ctypes.c_void_p(1), by_kernel=True) == 1044
    layout.clear()
    assert launch_shape._param_bytes(Driver(), ctypes.c_void_p(1), by_kernel=False) == 0
