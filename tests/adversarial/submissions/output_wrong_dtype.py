"""Wrong output: the right values in float32 instead of float16 (the dtype is part of the contract)."""

import _honest
import torch


def custom_kernel(data):
    return _honest.gemm(data).to(torch.float32)
