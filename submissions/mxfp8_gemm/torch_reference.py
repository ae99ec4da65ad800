#!POPCORN leaderboard mxfp8_gemm
#!POPCORN author harness-baselines
"""MXFP8 GEMM, torch baseline.

Plain torch, written against the data tuple only: every e4m3 element times its block's e8m0
scale (a power of two, so the product is exact in float32), then a float32 matmul, rounded to
bf16. Runs on the CPU and on any GPU; it is the correctness baseline, not a fast kernel.

It returns a new tensor instead of writing into c: this harness version treats every tuple
tensor that is not float16 as an input and rejects a call that modifies one.
"""

import torch
from task import input_t, output_t


def dequantize(data: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """(rows, K) e4m3 and (rows, K/32) e8m0 -> (rows, K) float32."""
    return data.to(torch.float32) * scales.to(torch.float32).repeat_interleave(32, dim=1)


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, _ = data
    return (dequantize(a, sfa) @ dequantize(b, sfb).T).to(torch.bfloat16)
