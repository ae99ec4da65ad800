"""The cluster-launch probe's decision (issue 38): which figures hold, refute or leave open that a stream
charges a thread-block cluster's launch more than a graph does. Pure arithmetic; the GPU runs the probe."""

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


def rows(probe, spin_excess: dict[int, float], vendor_excess: float) -> list[dict]:
    """Spin rows whose eager-less-graph is 1.0 us plus the cluster's excess, file rows likewise."""
    found = [{"variant": f"spin, {size}", "cluster": cluster, "eager_less_graph_us": 1.0 + spin_excess.get(cluster, 0)}
             for size in probe.SIZES for cluster in probe.CLUSTERS]
    files = [{"variant": f"{name} shape {i}", "cluster": None, "eager_less_graph_us": 1.0}
             for name in probe.FILES for i in range(probe.SHAPES)]
    files[0]["eager_less_graph_us"] += vendor_excess
    return found + files


def test_a_cluster_launch_that_costs_more_on_a_stream_is_held(probe):
    lines, verdict = probe.verdict(rows(probe, {2: 0.5, 4: 0.7}, 0.6))
    assert verdict.startswith("held")
    assert "one cluster, no spin, 4 CTAs a cluster: eager launch beyond a graph's +0.70 us" in lines[1]
    assert any("fp8_blockwise_gemm/scaled_mm.py shape 0: eager beyond a graph's +0.60 us" in line for line in lines)


def test_equal_costs_refute_it_and_mixed_ones_leave_it_open(probe):
    assert probe.verdict(rows(probe, {2: 0.1, 4: -0.1}, 0.15))[1].startswith("refuted")
    assert probe.verdict(rows(probe, {2: 0.5, 4: 0.7}, 0.1))[1] == "open"  # clusters cost more, cuBLAS does not
    assert probe.verdict(rows(probe, {2: 0.1, 4: 0.7}, 0.6))[1] == "open"


def test_the_spin_kernels_declare_their_clusters(probe):
    ptx = probe.spin_ptx()
    assert ".target sm_90" in ptx and ptx.count(".visible .entry spin_") == len(probe.CLUSTERS)
    assert ".entry spin_1(.param .u64 ns)\n" in ptx
    assert ".entry spin_4(.param .u64 ns) .reqnctapercluster 4, 1, 1\n" in ptx
