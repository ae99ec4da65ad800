#!POPCORN leaderboard timing_ladder
"""The timing ladder's kernel launched from a CUDA graph: issue 38's probe of the stream launch, not a baseline.

The same kernel as triton_ladder.py, captured once per buffer set (ranked runs draw every call's inputs
into the same buffers, so every timed call replays) and replayed on the caller's stream: the GPU starts a
graph's launch, whose descriptor and parameters were uploaded with the graph, instead of a stream launch
the driver writes per call. scripts/launch_path_probe.py holds it against triton_ladder.py worker process
by worker process (docs/timing.md, "The short rungs move by worker process"). Kept here, not under
submissions/: `harness review` rightly flags a contestant's file that captures a CUDA graph, and
scripts/graph_replay.py could not replay it (a graph cannot be captured inside the replay's own).
"""

import torch
import triton
import triton.language as tl
from task import input_t, output_t

BLOCK = 512
WARPS = 16
_GRAPHS: dict[tuple[int, int, int, int], torch.cuda.CUDAGraph] = {}


@triton.jit
def _ladder(x_ptr, y_ptr, n, iters, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    y = tl.load(x_ptr + offsets, mask=mask)
    for _ in range(iters):
        y = y * 0.5 + 0.25
    tl.store(y_ptr + offsets, y, mask=mask)


def _launch(x: torch.Tensor, y: torch.Tensor, iters: int) -> None:
    n = x.numel()
    _ladder[(triton.cdiv(n, BLOCK),)](x, y, n, iters, BLOCK=BLOCK, num_warps=WARPS)


def _graph(x: torch.Tensor, y: torch.Tensor, iters: int) -> torch.cuda.CUDAGraph:
    """This buffer set's captured launch; the first call of a set compiles and captures it."""
    key = (x.data_ptr(), y.data_ptr(), x.numel(), iters)
    if key not in _GRAPHS:
        _launch(x, y, iters)  # the JIT compile, outside the capture
        graph, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.graph(graph, stream=side):
            _launch(x, y, iters)
        torch.cuda.current_stream().wait_stream(side)
        _GRAPHS[key] = graph
    return _GRAPHS[key]


def custom_kernel(data: input_t) -> output_t:
    x, y, iters = data
    if x.is_cuda:
        _graph(x, y, iters).replay()
    else:  # the CPU check: Triton's interpreter has no graphs
        _launch(x, y, iters)
    return y
