"""Graph replay kernel by kernel: what Nsight Compute times, on calls of several kernels (issue 38, GPU only).

Nsight Compute times a call of two kernels as two durations, each kernel run alone (the second still
finds the first's output in the L2 under ``--cache-control none``); graph replay times the call whole,
the second kernel starting under the first's tail (a programmatic dependent launch) and no gap between
them. The two cannot agree on such calls by method (docs/timing.md, "Nsight Compute by workload"). This
replay times what ncu times: each call is captured in a graph, its kernel nodes are read out
(scripts/launch_shape.py) and added, in order, to a graph built by hand with a %globaltimer stamp node
between every two of them and before the first, behind the reading flush: per group [flush, stamp,
stamp, kernel 1, stamp, kernel 2, stamp, ...]. Each kernel reads its stamps less the group's floor (its
first two stamps); a call reads the sum of its kernels. GROUPS groups a graph (every input set ROUNDS
times), REPLAYS replays, the trimmed mean, as the replay clock (harness.sol.replay_clock).

For every row of scripts/ncu_times.py's output whose call ncu saw as more than one kernel, the per-kernel
replay (``replay_per_kernel_us``) is held against ncu less its floor per kernel, in issue 38's band
(max(3%, 0.3 us)); the verdict ``replay_per_kernel_in_band_of_ncu_less_floor`` and its count are printed.
Every row gets ``replay_in_band_of_ncu_by_method``: that verdict on calls of several kernels, the whole
call's against ncu (less its floor) on calls of one; its count over issue 38's rows closes the output.
A call with a node that is not a kernel (a copy, a memset) is reported, not timed.

    python3 scripts/kernel_replay.py NCU_TIMES.json OUT.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clock_checks import NCU_BAND, acceptance_line, in_band  # this folder's
from launch_shape import KernelNodeParams, captured, kernel_params, ordered_nodes
from ncu_times import CALLS as CALLS_OF_NCU  # its ``ncu_kernels`` counts kernels over that many calls

from harness.contract.libcuda import check, driver
from harness.contract.task_spec import load_task, shape_text
from harness.sol.globaltimer import KERNEL_NAME, PTX
from harness.sol.replay_clock import (
    GROUPS,
    POOL,
    REPLAYS,
    ROUNDS,
    load_shipped,
    reading_flush,
    shape_inputs,
    trimmed_mean,
)


class KernelReplay:
    """Times calls kernel by kernel inside one hand-built graph (the module docstring)."""

    def __init__(self) -> None:
        import torch

        from harness.contract.ptx_module import PtxModule

        self._module = PtxModule(PTX)
        self._stamp = self._module.function(KERNEL_NAME)
        self._flush = reading_flush()  # held: its graph reads and writes this closure's buffers
        self._flush_graph = captured(self._flush)
        self._slots: Any = None
        self._torch = torch

    def time(self, kernel: Callable[[Any], Any], inputs: list[Any]) -> list[float]:
        """Each kernel's trimmed mean over every group and replay, in us (the call's kernels in order)."""
        graphs = [captured(lambda data=data: kernel(data)) for data in inputs]  # kept: their nodes' parameters
        calls = [call_kernels(graph) for graph in graphs]
        kernels = len(calls[0])
        if any(len(call) != kernels for call in calls):
            raise RuntimeError("the input sets' calls launch different numbers of kernels")
        stamps = kernels + 2
        self._slots = self._torch.zeros(GROUPS * stamps, dtype=self._torch.int64, device="cuda")
        handle, execution = self._build([calls[i % POOL] for i in range(ROUNDS * POOL)], stamps)
        readings: list[list[float]] = [[] for _ in range(kernels)]
        stream = ctypes.c_void_p(self._torch.cuda.current_stream().cuda_stream)
        for _ in range(REPLAYS):
            check(driver().cuGraphLaunch(execution, stream), "cuGraphLaunch")
            self._torch.cuda.synchronize()
            slots = [int(v) for v in self._slots.cpu().tolist()]
            for group in range(GROUPS):
                mark = slots[group * stamps:(group + 1) * stamps]
                floor = mark[1] - mark[0]
                for index in range(kernels):
                    readings[index].append((mark[index + 2] - mark[index + 1] - floor) / 1e3)
        check(driver().cuGraphExecDestroy(execution), "cuGraphExecDestroy")
        check(driver().cuGraphDestroy(handle), "cuGraphDestroy")
        return [trimmed_mean(values) for values in readings]

    def _build(self, groups: list[list[KernelNodeParams]], stamps: int) -> tuple[ctypes.c_void_p, ctypes.c_void_p]:
        """The graph of every group, each node after the one before; instantiated."""
        cuda, graph = driver(), ctypes.c_void_p()
        check(cuda.cuGraphCreate(ctypes.byref(graph), 0), "cuGraphCreate")
        last: ctypes.c_void_p | None = None

        def add(adder: Callable[..., int], what: Any, name: str) -> None:
            nonlocal last
            node = ctypes.c_void_p()
            deps = (ctypes.c_void_p * 1)(last) if last is not None else None
            check(adder(ctypes.byref(node), graph, deps, ctypes.c_size_t(1 if last is not None else 0), what), name)
            last = node

        flush = ctypes.c_void_p(self._flush_graph.raw_cuda_graph())
        kept = []  # every stamp's parameter array lives until the graph is instantiated
        for group, call in enumerate(groups):
            add(cuda.cuGraphAddChildGraphNode, flush, "cuGraphAddChildGraphNode")
            for index in range(stamps):
                if index >= 2:
                    add(cuda.cuGraphAddKernelNode_v2, ctypes.byref(call[index - 2]), "cuGraphAddKernelNode_v2")
                stamp, arrays = self._stamp_params(group * stamps + index)
                kept.append(arrays)
                add(cuda.cuGraphAddKernelNode_v2, ctypes.byref(stamp), "cuGraphAddKernelNode_v2 (stamp)")
        execution = ctypes.c_void_p()
        check(cuda.cuGraphInstantiateWithFlags(ctypes.byref(execution), graph, ctypes.c_ulonglong(0)),
              "cuGraphInstantiateWithFlags")
        return graph, execution

    def _stamp_params(self, slot: int) -> tuple[KernelNodeParams, tuple[Any, ...]]:
        """A stamp node's parameters writing %globaltimer to ``slot`` (and the arrays they point into)."""
        address = ctypes.c_uint64(self._slots.data_ptr() + 8 * slot)
        pointers = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(address), ctypes.c_void_p))
        params = KernelNodeParams(func=self._stamp, gridDimX=1, gridDimY=1, gridDimZ=1, blockDimX=1, blockDimY=1,
                                  blockDimZ=1, sharedMemBytes=0, kernelParams=ctypes.cast(pointers, ctypes.c_void_p))
        return params, (address, pointers)


def call_kernels(graph: Any) -> list[KernelNodeParams]:
    """The kernel nodes of one captured call, in order; a node of another kind is refused."""
    found = []
    for node in ordered_nodes(ctypes.c_void_p(graph.raw_cuda_graph())):
        params = kernel_params(node)
        if params is None:
            raise RuntimeError("the call holds a node that is not a kernel (a copy or a memset)")
        found.append(params)
    return found


def judge(row: dict[str, Any], per_kernel: list[float] | None, note: str = "") -> dict[str, Any]:
    """The row with its per-kernel replay, the verdict against ncu less its floor, and that verdict as the row's
    comparison with ncu by ncu's method."""
    total = sum(per_kernel) if per_kernel else None
    verdict = in_band(total, row.get("ncu_less_floor_us"), *NCU_BAND)
    return {**row, "replay_kernels_us": per_kernel, "replay_per_kernel_us": total, "kernel_replay_note": note,
            "replay_per_kernel_in_band_of_ncu_less_floor": verdict, "replay_in_band_of_ncu_by_method": verdict}


def whole(row: dict[str, Any]) -> dict[str, Any]:
    """A call of one kernel: the whole-call replay is already ncu's method (less its floor where it matters)."""
    floor_verdict = row.get("replay_in_band_of_ncu_less_floor")
    return {**row, "replay_in_band_of_ncu_by_method":
            floor_verdict if floor_verdict is not None else row.get("replay_in_band_of_ncu")}


def several_kernels(row: dict[str, Any]) -> bool:
    return (row.get("ncu_kernels") or 0) > CALLS_OF_NCU and not row.get("note")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ncu_times", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    replay, judged, loaded = KernelReplay(), [], {}
    for row in json.loads(args.ncu_times.read_text()):
        if not several_kernels(row):
            judged.append(whole(row))
            continue
        path = Path("submissions") / row["file"]
        case = {shape_text(c): c for c in load_task(path.parent.name).benchmarks}[row["shape"]]
        try:
            kernel = loaded.setdefault(row["file"], load_shipped(path))
            per_kernel, note = replay.time(kernel, shape_inputs(path.parent.name, case)), ""
        except Exception as error:  # a call this replay cannot rebuild is reported, not fatal
            per_kernel, note = None, f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
        judged.append(judge(row, per_kernel, note))
        found = judged[-1]
        print(f"{row['file']} {row['shape']}: replay by kernel {found['replay_kernels_us']} = "
              f"{found['replay_per_kernel_us']} us, whole {row.get('replay_us')} us, ncu - floor "
              f"{row.get('ncu_less_floor_us')} us: in band {found['replay_per_kernel_in_band_of_ncu_less_floor']} "
              f"{note}".rstrip(), flush=True)
    args.out.write_text(json.dumps(judged, indent=2))
    print(acceptance_line([r for r in judged if several_kernels(r)], "replay_per_kernel_in_band_of_ncu_less_floor",
                          "replay kernel by kernel ~ ncu - floor (calls of several kernels)"))
    print(acceptance_line(judged, "replay_in_band_of_ncu_by_method",
                          "replay ~ ncu by ncu's method (one kernel: the whole call; several: kernel by kernel)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
