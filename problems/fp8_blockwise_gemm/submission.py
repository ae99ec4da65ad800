#!POPCORN leaderboard fp8_blockwise_gemm
#!POPCORN author harness-baselines
"""Blockwise fp8 GEMM (DeepSeek-V3 scaling), torch baseline.

Plain torch, written against the data tuple only: A's e4m3 elements times their 1x128 fp32
scale, B's times their 128x128 fp32 scale, then a float32 matmul, rounded to bf16. Runs on the
CPU and on any GPU; it is the correctness baseline, not a fast kernel.

It returns a new tensor instead of writing into c: this harness version treats every tuple
tensor that is not float16 as an input and rejects a call that modifies one.
"""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, sa, sb, _ = data
    n = b.shape[0]
    a_values = a.to(torch.float32) * sa.repeat_interleave(128, dim=1)
    b_scales = sb.repeat_interleave(128, dim=0)[:n].repeat_interleave(128, dim=1)
    return (a_values @ (b.to(torch.float32) * b_scales).T).to(torch.bfloat16)
