#!POPCORN leaderboard nvfp4_group_gemm
#!POPCORN author harness-baselines
"""NVFP4 grouped GEMM, torch baseline (one matmul per group).

Plain torch, written against the contest's data tuple only: decode every e2m1 nibble through a
16-entry table, multiply by its block's e4m3 scale, then a float32 matmul. Runs on the CPU and
on any GPU; it is the correctness baseline, not a fast kernel (it writes the decoded operands
to memory at 8x the packed size).
"""

import torch
from task import input_t, output_t

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def dequantize(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """(rows, K/2, L) fp4x2 codes and (rows, K/16, L) e4m3 scales -> (L, rows, K) float32."""
    table = torch.tensor(E2M1, device=packed.device)
    raw = packed.view(torch.uint8).permute(2, 0, 1)
    codes = torch.stack((raw & 0xF, raw >> 4), dim=-1).flatten(-2)
    blocks = table[codes.long()].unflatten(-1, (-1, 16))
    return (blocks * scales.permute(2, 0, 1).to(torch.float32).unsqueeze(-1)).flatten(-2)


def custom_kernel(data: input_t) -> output_t:
    abc, scales, _, _ = data
    outputs = []
    for (a, b, c), (sfa, sfb) in zip(abc, scales):
        product = torch.matmul(dequantize(a, sfa), dequantize(b, sfb).transpose(1, 2))
        c.copy_(product.permute(1, 2, 0))
        outputs.append(c)
    return outputs
