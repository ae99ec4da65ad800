"""How a call launches its kernels, read from a CUDA graph of it (GPU only; scripts/cluster_launch_probe.py).

A library's kernel (cuBLAS's, say) cannot be read from its source; its graph node can: the driver keeps,
per kernel node, the function, the grid and block, the shared memory, the parameter block and the
launch attributes. Read through ctypes (harness.contract.libcuda): cuGraphGetNodes, the kernel node's
parameters (``_v2``: a node launched through the runtime may name a CUkernel rather than a CUfunction),
its parameter layout (cuKernelGetParamInfo / cuFuncGetParamInfo, CUDA 12.4), its cluster dimension
(a launch attribute, or the kernel's own required width). The nodes come in dependency order, and a
kernel node's parameters can be added to another graph as they are (scripts/kernel_replay.py).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.contract.libcuda import check, driver

KERNEL_NODE = 0
CLUSTER_DIMENSION = 4
"""CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION."""
REQUIRED_CLUSTER_WIDTH = 11
"""CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH."""
EDGE_DATA = ctypes.c_uint8 * 8
"""CUgraphEdgeData: from_port, to_port, type, five reserved bytes."""


class KernelNodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2."""

    _fields_ = [("func", ctypes.c_void_p), *[(f"{d}Dim{a}", ctypes.c_uint) for d in ("grid", "block") for a in "XYZ"],
                ("sharedMemBytes", ctypes.c_uint), ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


@dataclass(frozen=True)
class LaunchShape:
    """One kernel node: its name, blocks and threads (each over all three dimensions), shared memory, the
    bytes of its parameter block, and CTAs a cluster along x (1: no cluster)."""

    name: str
    blocks: int
    threads: int
    shared_bytes: int
    param_bytes: int
    cluster: int


def captured(work: Callable[[], Any]) -> Any:
    """A CUDA graph of one ``work()`` (run once on a side stream first: JIT, allocations), kept for reading."""
    import torch

    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        work()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(graph):
        work()
    return graph


def ordered_nodes(handle: ctypes.c_void_p) -> list[ctypes.c_void_p]:
    """A graph's nodes, each after every node it depends on (its edges through cuGraphGetEdges_v2)."""
    cuda, count = driver(), ctypes.c_size_t()
    check(cuda.cuGraphGetNodes(handle, None, ctypes.byref(count)), "cuGraphGetNodes")
    nodes = (ctypes.c_void_p * count.value)()
    check(cuda.cuGraphGetNodes(handle, nodes, ctypes.byref(count)), "cuGraphGetNodes")
    edges = ctypes.c_size_t()
    check(cuda.cuGraphGetEdges_v2(handle, None, None, None, ctypes.byref(edges)), "cuGraphGetEdges_v2")
    sources, targets = (ctypes.c_void_p * max(1, edges.value))(), (ctypes.c_void_p * max(1, edges.value))()
    data = (EDGE_DATA * max(1, edges.value))()  # a programmatic edge carries data: without room, the query fails
    if edges.value:
        check(cuda.cuGraphGetEdges_v2(handle, sources, targets, data, ctypes.byref(edges)), "cuGraphGetEdges_v2")
    return [ctypes.c_void_p(n) for n in dependency_order(list(nodes), list(zip(sources[:edges.value],
                                                                               targets[:edges.value])))]


def dependency_order(nodes: list[int], edges: list[tuple[int, int]]) -> list[int]:
    """Kahn's order: each node after its sources, ties in the graph's own order."""
    waiting = {node: sum(1 for _, target in edges if target == node) for node in nodes}
    ready, order = [node for node in nodes if not waiting[node]], []
    while ready:
        node = ready.pop(0)
        order.append(node)
        for source, target in edges:
            if source == node:
                waiting[target] -= 1
                if not waiting[target]:
                    ready.append(target)
    return order


def kernel_params(node: ctypes.c_void_p) -> KernelNodeParams | None:
    """A kernel node's parameters (its kernelParams valid while the node lives); None for another kind."""
    cuda, kind = driver(), ctypes.c_int()
    check(cuda.cuGraphNodeGetType(node, ctypes.byref(kind)), "cuGraphNodeGetType")
    if kind.value != KERNEL_NODE:
        return None
    params = KernelNodeParams()
    check(cuda.cuGraphKernelNodeGetParams_v2(node, ctypes.byref(params)), "cuGraphKernelNodeGetParams_v2")
    return params


def kernel_shapes(work: Callable[[], Any]) -> list[LaunchShape]:
    """Every kernel node of ``work`` captured in a graph, in launch order."""
    graph = captured(work)
    nodes = ordered_nodes(ctypes.c_void_p(graph.raw_cuda_graph()))
    return [_shape(driver(), node, params) for node in nodes if (params := kernel_params(node)) is not None]


def _shape(cuda: ctypes.CDLL, node: ctypes.c_void_p, params: KernelNodeParams) -> LaunchShape:
    by_kernel = bool(params.kern)
    handle = ctypes.c_void_p(params.kern if by_kernel else params.func)
    name = ctypes.c_char_p()
    check((cuda.cuKernelGetName if by_kernel else cuda.cuFuncGetName)(ctypes.byref(name), handle), "GetName")
    value = (ctypes.c_uint * 16)()  # a node without the attribute, or a driver without it, reads no cluster
    cuda.cuGraphKernelNodeGetAttribute(node, CLUSTER_DIMENSION, ctypes.byref(value))
    width, device = ctypes.c_int(), ctypes.c_int()
    if by_kernel:
        check(cuda.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
        cuda.cuKernelGetAttribute(ctypes.byref(width), REQUIRED_CLUSTER_WIDTH, handle, device)
    else:
        cuda.cuFuncGetAttribute(ctypes.byref(width), REQUIRED_CLUSTER_WIDTH, handle)
    return LaunchShape(name.value.decode(), params.gridDimX * params.gridDimY * params.gridDimZ,
                       params.blockDimX * params.blockDimY * params.blockDimZ, params.sharedMemBytes,
                       _param_bytes(cuda, handle, by_kernel), max(1, value[0], width.value))


def _param_bytes(cuda: ctypes.CDLL, handle: ctypes.c_void_p, by_kernel: bool) -> int:
    """The parameter block's size: the last parameter's offset plus its size (0 without parameters)."""
    info = cuda.cuKernelGetParamInfo if by_kernel else cuda.cuFuncGetParamInfo
    end, index = 0, 0
    while True:
        offset, size = ctypes.c_size_t(), ctypes.c_size_t()
        if info(handle, ctypes.c_size_t(index), ctypes.byref(offset), ctypes.byref(size)) != 0:
            return end
        end, index = offset.value + size.value, index + 1
