"""Does a stream charge a thread-block cluster's launch more than a graph does? (issue 38, GPU only)

cuBLAS's blockwise fp8 GEMM at m=64 (`torch._scaled_mm`, one kernel launched in 4x1 clusters) reads
0.4-0.8 us above graph replay by the harness, where every single-kernel Triton row (no clusters) reads
-0.23..+0.10 us from it (docs/timing.md, "cuBLAS's first fp8 shape"). The harness takes off each call
an event overhead measured with a plain (cluster-less) empty kernel: an eager launch's cost beyond a graph
node's. If an eager cluster launch costs more than a plain one beyond its graph node, the harness
charges that difference and replay does not.

Every variant is timed three ways, each call behind the reading flush (harness.sol.replay_clock):

- ``eager_us``: CUDA events around one eager launch on torch's current stream, the GPU kept busy by a
  queued sleep while the host queues it (the harness's way, before its overhead is taken off);
- ``graph_launch_us``: the same events around the replay of a graph holding that one launch;
- ``replay_us``: the replay clock (%globaltimer stamps inside one graph, floor off).

Variants: PTX kernels that spin on %globaltimer, plain or declared with 2 or 4 CTAs a cluster
(``.reqnctapercluster``), as one cluster with no spin and as 128 blocks of 128 threads spinning 20 us;
then the fp8 problem's first two shapes by the cuBLAS file and the Triton file (no clusters: the control).

``eager_less_graph_us`` (eager less graph launch, the same events) is what an eager launch of the variant
costs beyond a graph's; its excess over the plain kernel's of the same size is the cluster's. Held when
every cluster variant's excess is at least HELD_US (and cuBLAS's at m=64 over Triton's at least that);
refuted when every one is within REFUTED_US of 0; else open. The harness-like figure
(``eager_us`` less the plain empty kernel's eager-less-b2b overhead, as the core takes it) is printed
beside replay.

    python3 scripts/cluster_launch_probe.py OUT.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from harness.contract.ptx_module import PtxModule
from harness.contract.task_spec import load_task, shape_text
from harness.sol.replay_clock import POOL, ReplayClock, graph_per_call_us, load_shipped, reading_flush, shape_inputs

SAMPLES = 200
SLEEP_CYCLES = 400_000
"""About 0.2 ms at 1.98 GHz: the host queues the call while the GPU sleeps (the harness's hold does the same)."""
CLUSTERS = (1, 2, 4)
SIZES = {"one cluster, no spin": (0, 0), "128 blocks, 20 us spin": (128, 20_000)}
"""(blocks, 0 = one cluster; spin ns)."""
HELD_US, REFUTED_US = 0.4, 0.2
FILES = ("fp8_blockwise_gemm/scaled_mm.py", "fp8_blockwise_gemm/triton_blockwise_gemm.py")
SHAPES = 2


def spin_ptx() -> str:
    """One spin kernel per cluster size: returns once %globaltimer has moved ``ns`` past its start."""
    body = ("{\n.reg .b64 %n, %s, %t;\n.reg .pred %p;\nld.param.u64 %n, [ns];\nmov.u64 %s, %globaltimer;\n"
            "add.u64 %n, %n, %s;\n$Lspin:\nmov.u64 %t, %globaltimer;\nsetp.lt.u64 %p, %t, %n;\n@%p bra $Lspin;\n"
            "ret;\n}\n")
    def entry(size: int) -> str:
        cluster = f" .reqnctapercluster {size}, 1, 1" if size > 1 else ""
        return f".visible .entry spin_{size}(.param .u64 ns){cluster}\n{body}"

    kernels = [entry(size) for size in CLUSTERS]
    return ".version 7.8\n.target sm_90\n.address_size 64\n" + "".join(kernels)


def event_us(run: Callable[[int], Any], flush: Callable[[], Any]) -> float:
    """Median of SAMPLES event pairs around ``run(i)``, each behind the flush and a queued sleep."""
    times = []
    for index in range(SAMPLES):
        flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(SLEEP_CYCLES)
        start.record()
        run(index)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def captured(work: Callable[[], Any]) -> Any:
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        work()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        work()
    return graph


def measure(works: list[Callable[[], Any]], flush: Callable[[], Any], clock: ReplayClock) -> dict[str, float]:
    """One variant's three readings (``works``: one call per input set, cycled)."""
    for work in works:
        work()
    graphs = [captured(work) for work in works]
    eager = event_us(lambda i: works[i % len(works)](), flush)
    graph_launch = event_us(lambda i: graphs[i % len(graphs)].replay(), flush)
    replay = clock.time(lambda work: work(), [works[i % len(works)] for i in range(POOL)]).us
    return {"eager_us": eager, "graph_launch_us": graph_launch, "replay_us": replay,
            "eager_less_graph_us": eager - graph_launch}


def spin_rows(flush: Callable[[], Any], clock: ReplayClock) -> list[dict[str, Any]]:
    module = PtxModule(spin_ptx())
    rows = []
    for size_name, (blocks, ns) in SIZES.items():
        for cluster in CLUSTERS:
            def launch(cluster: int = cluster, blocks: int = blocks or cluster, ns: int = ns) -> None:
                module.launch(f"spin_{cluster}", [ns], blocks=blocks, threads=128)

            rows.append({"variant": f"spin, {size_name}", "cluster": cluster, **measure([launch], flush, clock)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def file_rows(flush: Callable[[], Any], clock: ReplayClock) -> list[dict[str, Any]]:
    rows = []
    for name in FILES:
        path = Path("submissions") / name
        kernel = load_shipped(path)
        for case in load_task(path.parent.name).benchmarks[:SHAPES]:
            inputs = shape_inputs(path.parent.name, case)
            works = [lambda data=data, kernel=kernel: kernel(data) for data in inputs]
            rows.append({"variant": f"{name} {shape_text(case)}", "cluster": None, **measure(works, flush, clock)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def verdict(rows: list[dict[str, Any]]) -> tuple[list[str], str]:
    """Each cluster variant's excess over the plain kernel of its size, cuBLAS's over Triton's, and the verdict."""
    lines, excesses = [], []
    for size_name in SIZES:
        sized = {r["cluster"]: r for r in rows if r["variant"] == f"spin, {size_name}"}
        for cluster in CLUSTERS[1:]:
            excess = sized[cluster]["eager_less_graph_us"] - sized[1]["eager_less_graph_us"]
            excesses.append(excess)
            lines.append(f"{size_name}, {cluster} CTAs a cluster: eager launch beyond a graph's {excess:+.2f} us "
                         "more than the plain kernel's")
    files = [r for r in rows if r["cluster"] is None]
    for index in range(SHAPES):
        vendor, control = files[index], files[SHAPES + index]
        excess = vendor["eager_less_graph_us"] - control["eager_less_graph_us"]
        excesses.append(excess)
        lines.append(f"{vendor['variant']}: eager beyond a graph's {excess:+.2f} us more than {control['variant']}'s")
    if all(e >= HELD_US for e in excesses[:-SHAPES]) and excesses[-SHAPES] >= HELD_US:
        return lines, "held: an eager cluster launch costs more beyond its graph node than a plain one"
    if all(abs(e) <= REFUTED_US for e in excesses):
        return lines, "refuted: a cluster's eager launch costs what a plain one does beyond its graph node"
    return lines, "open"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    out = parser.parse_args().out
    flush, clock = reading_flush(), ReplayClock()
    empty = PtxModule(spin_ptx())
    overhead = event_us(lambda i: empty.launch("spin_1", [0]), flush) - graph_per_call_us(
        [lambda: empty.launch("spin_1", [0])] * 100)
    print(f"the core's way of an event overhead (plain empty kernel, eager less back to back): {overhead:.2f} us")
    rows = spin_rows(flush, clock) + file_rows(flush, clock)
    for row in rows:
        row["harness_like_us"] = row["eager_us"] - overhead
        print(f"{row['variant']} (cluster {row['cluster']}): eager {row['eager_us']:.2f}, graph launch "
              f"{row['graph_launch_us']:.2f}, replay {row['replay_us']:.2f}, harness-like "
              f"{row['harness_like_us']:.2f} ({row['harness_like_us'] - row['replay_us']:+.2f} from replay) us")
    lines, found = verdict(rows)
    print("\n".join(lines) + f"\ncluster launch: {found}")
    out.write_text(json.dumps({"overhead_us": overhead, "rows": rows, "lines": lines, "verdict": found}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
