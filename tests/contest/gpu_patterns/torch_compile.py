#!POPCORN leaderboard nvfp4_gemv
"""A contest pattern on the GPU: torch.compile (inductor generates Triton and compiles it, in its
compile workers: child processes under the worker's sandbox) applied to the reference's answer."""

import torch

from reference import ref_kernel

scaled = torch.compile(lambda tensor: tensor * 1.0)


def custom_kernel(data):
    return scaled(ref_kernel(data))
