#!POPCORN leaderboard mxfp8_gemm
#!POPCORN author harness-baselines
"""MXFP8 GEMM through the vendor library: torch._scaled_mm with e8m0 scales in the blocked 128x4
layout (cuBLASLt's VEC32_UE8M0 block scaling), which the data tuple hands over ready-made.

sm_100 (Blackwell) only: Hopper has fp8 tensor cores but no block-scaled MMA, and cuBLAS answers
CUBLAS_STATUS_NOT_SUPPORTED there; the CPU has no block-scaled _scaled_mm at all. Not run on a
GPU by this project yet (docs/baselines.md).
"""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, _, _, sfa_blocked, sfb_blocked, _ = data
    return torch._scaled_mm(a, b.t(), scale_a=sfa_blocked, scale_b=sfb_blocked, out_dtype=torch.bfloat16)
