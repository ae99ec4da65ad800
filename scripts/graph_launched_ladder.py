#!POPCORN leaderboard timing_ladder
"""The timing ladder's kernel launched from a CUDA graph: issue 38's probe of the stream launch, not a baseline.

triton_ladder.py's own launch, captured once per buffer set (ranked runs draw every call's inputs
into one of a few buffer sets, each warmed before timing, so every timed call replays) and replayed on
the caller's stream: the GPU starts a graph's launch, whose descriptor and parameters were uploaded with
the graph, instead of a stream launch the driver writes per call. scripts/launch_path_probe.py holds it
against triton_ladder.py worker process by worker process (docs/timing.md, "The short rungs move by worker
process"; run 44 call 1: the graph-launched ladder moved more, not less). Kept here, not under
submissions/: `harness review` rightly flags a contestant's file that captures a CUDA graph, and
scripts/graph_replay.py could not replay it (a graph cannot be captured inside the replay's own).
"""

import importlib.util
from pathlib import Path

import torch
from task import input_t, output_t

# The very kernel and launch of the shipped ladder, loaded from its file (this probe lives in scripts/, so
# the sibling import triton_ladder_twice.py uses does not reach it): the probe compares launches, not kernels.
_SPEC = importlib.util.spec_from_file_location(
    "triton_ladder", Path(__file__).resolve().parents[1] / "submissions" / "timing_ladder" / "triton_ladder.py")
_LADDER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_LADDER)
_GRAPHS: dict[tuple[int, int, int, int], torch.cuda.CUDAGraph] = {}


def _graph(x: torch.Tensor, y: torch.Tensor, iters: int) -> torch.cuda.CUDAGraph:
    """This buffer set's captured launch; the first call of a set compiles and captures it."""
    key = (x.data_ptr(), y.data_ptr(), x.numel(), iters)
    if key not in _GRAPHS:
        _LADDER.custom_kernel((x, y, iters))  # the JIT compile, outside the capture
        graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.graph(graph, stream=side):
            _LADDER.custom_kernel((x, y, iters))
        torch.cuda.current_stream().wait_stream(side)
        _GRAPHS[key] = graph
    return _GRAPHS[key]


def custom_kernel(data: input_t) -> output_t:
    x, y, iters = data
    if x.is_cuda:
        _graph(x, y, iters).replay()
        return y
    return _LADDER.custom_kernel(data)  # the CPU check: Triton's interpreter has no graphs
