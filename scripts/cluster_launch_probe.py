"""Why does a stream charge cuBLAS's fp8 call more than a graph does? (issue 38, GPU only)

cuBLAS's blockwise fp8 GEMM at m=64 (`torch._scaled_mm`, one kernel launched in 4x1 clusters) reads
0.4-1.0 us above graph replay by the harness, where every single-kernel Triton row reads -0.23..+0.10 us
from it (docs/timing.md, "cuBLAS's first fp8 shape"). The harness takes off each call an event overhead
measured with a plain empty kernel: an eager launch's cost beyond a graph node's. Whatever makes an eager
launch of cuBLAS's call cost more than that beyond its graph, the harness charges and replay does not.

Every variant is timed three ways, each call behind the reading flush (harness.sol.replay_clock):

- ``eager_us``: CUDA events around one eager launch on torch's current stream, the GPU kept busy by a
  queued sleep while the host queues it (the harness's way, before its overhead is taken off);
- ``graph_launch_us``: the same events around the replay of a graph holding that one launch;
- ``replay_us``: the replay clock (%globaltimer stamps inside one graph, floor off).

``eager_less_graph_us`` (eager less graph launch, the same events) is what an eager launch of the variant
costs beyond a graph's; its excess over a reference variant's is what the hypothesis under test costs.
Each hypothesis is held when every one of its variants' excesses is at least HELD_US and cuBLAS's at
m=64 over the Triton file's (no clusters, the control) is too; refuted when every one is within
REFUTED_US of 0; else open:

- **cluster**: PTX kernels spinning on %globaltimer declared with 2 or 4 CTAs a cluster
  (``.reqnctapercluster``) against the plain one, as one cluster with no spin and as 128 blocks of 128
  threads spinning 20 us (run 36 call 1 refuted it: -0.35..-0.16 us);
- **parameters**: the plain kernel with a 1 KB and a 4 KB parameter block against its 8 bytes (the driver
  copies an eager launch's parameters into the queue; a graph holds them already);
- **launch shape**: a spin launched exactly as each file's kernel node is (scripts/launch_shape.py: its
  blocks, threads, cluster and parameter bytes), cuBLAS's against Triton's;
- **placement**: the eager calls again, each block of them allocating from a fresh memory pool, so that
  their outputs land in other segments (judged only where the outputs' addresses did move);
- **host**: cuBLAS's call behind a sleep ten times as long: if its excess stays, the host's pace of
  queueing is not it;
- **flush**: each file's first shape eager and graph-launched with no flush before the calls: if the
  excess goes, it is something the flush evicts that a graph launch does not have to fetch again.

Named for where it began (clusters). What run 36 found (docs/timing.md, "Where the ~1 us comes from"):
the excess follows neither the kernel nor its launch; it lands on one short call or another per process.

Beside them, the CUDA API calls and GPU activities torch.profiler records for one eager call of each
file (a stream operation cuBLAS queues beside its kernel would show there), and the harness-like figure
(``eager_us`` less the plain empty kernel's eager-less-back-to-back overhead, as the core takes it).

    python3 scripts/cluster_launch_probe.py OUT.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from launch_shape import LaunchShape, captured, kernel_shapes  # this folder's

from harness.contract.ptx_module import PtxModule
from harness.contract.task_spec import load_task, shape_text
from harness.sol.replay_clock import POOL, ReplayClock, graph_per_call_us, load_shipped, reading_flush, shape_inputs

SAMPLES = 200
SLEEP_CYCLES = 400_000
"""About 0.2 ms at 1.98 GHz: the host queues the call while the GPU sleeps (the harness's hold does the same)."""
LONG_SLEEP = 10
POOLS = 7
"""The placement test: blocks of eager calls, each allocating its outputs from a fresh memory pool."""
HELD_US, REFUTED_US = 0.4, 0.2
MIMIC = "launched as "
"""The label of a spin launched as a file's kernel is (its blocks, threads, cluster and parameter bytes)."""
FILES = ("fp8_blockwise_gemm/scaled_mm.py", "fp8_blockwise_gemm/triton_blockwise_gemm.py")
SHAPES = 2


@dataclass(frozen=True)
class Spin:
    """A PTX kernel spinning ``ns`` on %globaltimer: CTAs a cluster, bytes of parameters beyond ``ns``, blocks."""

    cluster: int = 1
    blob: int = 0
    blocks: int = 0
    """0: one cluster."""
    ns: int = 0
    threads: int = 128

    @property
    def entry(self) -> str:
        return f"spin_c{self.cluster}_p{self.blob}"

    @property
    def name(self) -> str:
        size = f"{self.blocks} blocks, {self.ns // 1000} us spin" if self.blocks else "one cluster, no spin"
        return f"spin, {self.cluster} CTAs a cluster, {8 + self.blob} B of parameters, {size}, {self.threads} threads"

    def launch(self, module: PtxModule) -> None:
        module.launch(self.entry, [self.ns, *([bytes(self.blob)] if self.blob else [])],
                      blocks=self.blocks or self.cluster, threads=self.threads)

    @classmethod
    def like(cls, shape: LaunchShape) -> Spin:
        """A 20 us spin launched as ``shape`` is: its blocks, threads, cluster and parameter bytes."""
        blob = max(0, -(-(shape.param_bytes - 8) // 8) * 8)
        return cls(cluster=shape.cluster, blob=blob, blocks=shape.blocks, ns=20_000, threads=min(shape.threads, 1024))

    def ptx(self) -> str:
        blob = f", .param .align 8 .b8 blob[{self.blob}]" if self.blob else ""
        cluster = f" .reqnctapercluster {self.cluster}, 1, 1" if self.cluster > 1 else ""
        return (f".visible .entry {self.entry}(.param .u64 ns{blob}){cluster}\n{{\n.reg .b64 %n, %s, %t;\n"
                ".reg .pred %p;\nld.param.u64 %n, [ns];\nmov.u64 %s, %globaltimer;\nadd.u64 %n, %n, %s;\n"
                "$Lspin:\nmov.u64 %t, %globaltimer;\nsetp.lt.u64 %p, %t, %n;\n@%p bra $Lspin;\nret;\n}\n")


SIZES = ({}, {"blocks": 128, "ns": 20_000})
HYPOTHESES = {
    "cluster": [(Spin(cluster=c, **size), Spin(**size)) for size in SIZES for c in (2, 4)],
    "parameters": [(Spin(blob=b, **size), Spin(**size)) for size in SIZES for b in (1016, 4088)],
}
"""Per hypothesis, (variant, reference) pairs of spin kernels."""


def spins() -> list[Spin]:
    return list(dict.fromkeys(spin for pairs in HYPOTHESES.values() for pair in pairs for spin in pair))


def spin_ptx(chosen: list[Spin] | None = None) -> str:
    """Each kernel once (the sizes share their kernel); PTX 8.1 takes parameter blocks over 4 KB."""
    kernels = {spin.entry: spin.ptx() for spin in (spins() if chosen is None else chosen)}
    return ".version 8.1\n.target sm_90\n.address_size 64\n" + "".join(kernels.values())


def event_us(run: Callable[[int], Any], flush: Callable[[], Any], sleep: int = SLEEP_CYCLES) -> float:
    """Median of SAMPLES event pairs around ``run(i)``, each behind the flush and a queued sleep."""
    times = []
    for index in range(SAMPLES):
        flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(sleep)
        start.record()
        run(index)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def eager_and_graph(works: list[Callable[[], Any]], flush: Callable[[], Any],
                    sleep: int = SLEEP_CYCLES) -> dict[str, float]:
    """The calls eager and graph-launched under the same events (``works``: one call per input set, cycled)."""
    graphs = [captured(work) for work in works]
    eager = event_us(lambda i: works[i % len(works)](), flush, sleep)
    graph_launch = event_us(lambda i: graphs[i % len(graphs)].replay(), flush, sleep)
    return {"eager_us": eager, "graph_launch_us": graph_launch, "eager_less_graph_us": eager - graph_launch}


def measure(works: list[Callable[[], Any]], flush: Callable[[], Any], clock: ReplayClock,
            sleep: int = SLEEP_CYCLES) -> dict[str, float]:
    """One variant's three readings: eager and graph launch under events, and the replay clock."""
    for work in works:
        work()
    launched = eager_and_graph(works, flush, sleep)
    return {**launched, "replay_us": clock.time(lambda work: work(), [works[i % len(works)] for i in range(POOL)]).us}


def spin_rows(chosen: list[Spin], flush: Callable[[], Any], clock: ReplayClock,
              label: str = "") -> dict[str, dict[str, Any]]:
    module, rows = PtxModule(spin_ptx(chosen)), {}
    for spin in chosen:
        name = f"{label}{spin.name}"
        rows[name] = {"variant": name, **measure([lambda spin=spin: spin.launch(module)], flush, clock)}
        print(json.dumps(rows[name]), flush=True)
    return rows


def file_rows(flush: Callable[[], Any], clock: ReplayClock
              ) -> tuple[dict[str, dict[str, Any]], dict[str, list[LaunchShape]]]:
    """Each file's first SHAPES shapes, and cuBLAS's first behind a sleep LONG_SLEEP times as long; the API
    calls and GPU activities of one eager call of each file's first shape, and its kernels' launch shapes."""
    rows, shapes = {}, {}
    for name in FILES:
        path = Path("submissions") / name
        kernel = load_shipped(path)
        for number, case in enumerate(load_task(path.parent.name).benchmarks[:SHAPES]):
            inputs = shape_inputs(path.parent.name, case)
            works = [lambda data=data, kernel=kernel: kernel(data) for data in inputs]
            sleeps = {"": SLEEP_CYCLES}
            if name == FILES[0] and not number:
                sleeps[", a long sleep"] = LONG_SLEEP * SLEEP_CYCLES
            for label, sleep in sleeps.items():
                variant = f"{name} {shape_text(case)}{label}"
                rows[variant] = {"variant": variant, **measure(works, flush, clock, sleep)}
                print(json.dumps(rows[variant]), flush=True)
            if not number:
                base = f"{name} {shape_text(case)}"
                rows |= placement_rows(base, works, flush, rows[base]["graph_launch_us"])
                rows[f"{base}, no flush"] = unflushed_row(f"{base}, no flush", works)
                print(f"{name}: one eager call: {api_calls(works[0])}", flush=True)
                shapes[name] = kernel_shapes(works[0])
                print(f"{name}: launch shapes: {[asdict(shape) for shape in shapes[name]]}", flush=True)
    return rows, shapes


def placement_rows(variant: str, works: list[Callable[[], Any]], flush: Callable[[], Any],
                   graph_launch_us: float) -> dict[str, dict[str, Any]]:
    """The eager calls again, each block of them allocating from a fresh memory pool (torch.cuda.MemPool), so
    that their outputs land in other segments (the graph's outputs stay in its pool): each block against the
    same graph launch, with the outputs' addresses it saw."""
    rows, pools = {}, []  # every pool held to the end: a pool let go hands its segment to the next
    for block in range(1, POOLS + 1):
        addresses: set[int] = set()

        def call(i: int, addresses: set[int] = addresses) -> None:
            addresses.add(works[i % len(works)]().data_ptr())

        pools.append(torch.cuda.MemPool())
        with torch.cuda.use_mem_pool(pools[-1]):
            eager = event_us(call, flush)
        name = f"{variant}, outputs in fresh pool {block}"
        rows[name] = {"variant": name, "eager_us": eager, "graph_launch_us": graph_launch_us,
                      "eager_less_graph_us": eager - graph_launch_us, "output_addresses": sorted(addresses),
                      "output_offsets_in_2mb": sorted({a % (1 << 21) for a in addresses})}
        print(json.dumps(rows[name]), flush=True)
    return rows


def unflushed_row(name: str, works: list[Callable[[], Any]]) -> dict[str, Any]:
    """Eager and graph launch under the same events with no flush before the calls: what the flush evicts
    (the kernel's code, its constants, address translations) stays for both."""
    row = {"variant": name, **eager_and_graph(works, lambda: None)}
    print(json.dumps(row), flush=True)
    return row


def flush_lines(rows: dict[str, dict[str, Any]], bases: list[str]) -> list[str]:
    """Each base's eager-beyond-graph with and without the flush; held (the excess is something the flush
    evicts) when every base with HELD_US or more of it keeps REFUTED_US or less unflushed, refuted when each
    keeps HELD_US or more, untested when no base had the excess."""
    lines, kept = [], []
    for base in bases:
        flushed, unflushed = rows[base]["eager_less_graph_us"], rows[f"{base}, no flush"]["eager_less_graph_us"]
        lines.append(f"flush: {base}: eager beyond a graph's {flushed:+.2f} us behind the flush, "
                     f"{unflushed:+.2f} without")
        if flushed >= HELD_US:
            kept.append(unflushed)
    if not kept:
        return [*lines, "flush: untested (no call had the excess)"]
    return [*lines, f"flush: {rule(all(k <= REFUTED_US for k in kept), all(k >= HELD_US for k in kept))}"]


def api_calls(work: Callable[[], Any]) -> dict[str, int]:
    """torch.profiler's CUDA API calls and GPU activities during one call, by name (count)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
        work()
        torch.cuda.synchronize()
    found: dict[str, int] = {}
    for event in trace.events():
        if event.name.startswith(("cuda", "cu")) or event.device_type == torch.autograd.DeviceType.CUDA:
            found[event.name[:90]] = found.get(event.name[:90], 0) + 1
    return found


def rule(held: bool, refuted: bool) -> str:
    """Every hypothesis's verdict from its own two tests: held first, then refuted, else open."""
    return "held" if held else "refuted" if refuted else "open"


def verdict(excesses: list[float], vendor_excess: float | None) -> str:
    """held, refuted or open, by the module docstring's rules (vendor_excess None: the vendor is not tested)."""
    return rule(all(e >= HELD_US for e in excesses) and (vendor_excess is None or vendor_excess >= HELD_US),
                all(abs(e) <= REFUTED_US for e in excesses))


def placement_lines(rows: dict[str, dict[str, Any]], bases: list[str]) -> list[str]:
    """Each base variant's eager-beyond-graph as its outputs move to fresh pools, and the verdict over the bases
    whose outputs did move (other addresses in each block): held when it moves by HELD_US or more on either file,
    refuted when by REFUTED_US or less on each; untested when no base's outputs moved (placement_rows)."""
    lines, spreads = [], []
    for base in bases:
        pooled = (f"{base}, outputs in fresh pool {n}" for n in range(1, POOLS + 1))
        moved_rows = [name for name in pooled if name in rows]
        moved = [rows[name]["eager_less_graph_us"] for name in [base, *moved_rows] if name in rows]
        addresses = {tuple(rows[name].get("output_addresses", ())) for name in moved_rows}
        if len(addresses) > 1:
            spreads.append(max(moved) - min(moved))
        lines.append(f"placement: {base}: eager beyond a graph's {', '.join(f'{m:+.2f}' for m in moved)} us (its "
                     f"own outputs, then {len(moved_rows)} fresh pools; {len(addresses)} sets of output addresses)")
    if not spreads:
        return [*lines, "placement: untested (the outputs did not move)"]
    return [*lines, f"placement: {rule(max(spreads) >= HELD_US, max(spreads) <= REFUTED_US)}"]


def decide(rows: dict[str, dict[str, Any]]) -> list[str]:
    """Each hypothesis's excesses and verdict, and cuBLAS's excess over Triton's per shape."""
    def excess(variant: str, reference: str) -> float:
        return rows[variant]["eager_less_graph_us"] - rows[reference]["eager_less_graph_us"]

    files = [name for name in rows if name.startswith(FILES[0]) and not name.endswith(("a long sleep", "no flush"))
             and "fresh pool" not in name]
    controls = [name for name in rows if name.startswith(FILES[1]) and not name.endswith("no flush")
                and "fresh pool" not in name]
    vendor = [excess(v, c) for v, c in zip(files, controls, strict=True)]
    lines = [f"{v}: eager beyond a graph's {e:+.2f} us more than {c}'s" for v, c, e in zip(files, controls, vendor)]
    for hypothesis, pairs in HYPOTHESES.items():
        found = [excess(variant.name, reference.name) for variant, reference in pairs]
        lines += [f"{hypothesis}: {v.name}: {e:+.2f} us beyond {r.name}" for (v, r), e in zip(pairs, found)]
        lines.append(f"{hypothesis}: {verdict(found, vendor[0])}")
    mimics = [name for name in rows if name.startswith(MIMIC)]
    if len(mimics) == 2:  # cuBLAS's kernel's launch shape, then Triton's
        found = excess(*mimics)
        lines += [f"launch shape: {mimics[0]}: {found:+.2f} us beyond {mimics[1]}",
                  f"launch shape: {verdict([found], vendor[0])}"]
    lines += placement_lines(rows, [files[0], controls[0]])
    lines += flush_lines(rows, [files[0], controls[0]])
    longer = excess(f"{files[0]}, a long sleep", files[0])
    lines.append(f"host: cuBLAS's first shape behind a {LONG_SLEEP}x sleep: {longer:+.2f} us beyond the usual sleep's "
                 f"excess: {rule(False, abs(longer) <= REFUTED_US)}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    out = parser.parse_args().out
    flush, clock, module = reading_flush(), ReplayClock(), PtxModule(spin_ptx([Spin()]))
    empty = Spin()
    overhead = event_us(lambda i: empty.launch(module), flush) - graph_per_call_us([lambda: empty.launch(module)] * 100)
    print(f"the core's way of an event overhead (plain empty kernel, eager less back to back): {overhead:.2f} us")
    rows, shapes = file_rows(flush, clock)
    rows |= spin_rows(spins(), flush, clock)
    if all(len(shapes.get(name, [])) == 1 for name in FILES):  # one kernel each: spin as each is launched
        for name in FILES:
            rows |= spin_rows([Spin.like(shapes[name][0])], flush, clock, f"{MIMIC}{name}'s kernel: ")
    for row in rows.values():
        row["harness_like_us"] = row["eager_us"] - overhead
        replay = row.get("replay_us")  # the placement rows time the eager calls only
        against = f", replay {replay:.2f} ({row['harness_like_us'] - replay:+.2f} from it)" if replay else ""
        print(f"{row['variant']}: eager {row['eager_us']:.2f}, graph launch {row['graph_launch_us']:.2f}, "
              f"harness-like {row['harness_like_us']:.2f}{against} us")
    lines = decide(rows)
    print("\n".join(lines))
    out.write_text(json.dumps({"overhead_us": overhead, "rows": list(rows.values()), "lines": lines}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
