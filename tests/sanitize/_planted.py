"""What the planted defects share: a correct output (the problem's own reference) and a CUDA
kernel compiled with NVRTC (torch.cuda._compile_kernel), so that each defect is one small kernel."""

import torch

from problems.nvfp4_gemv.reference import ref_kernel


def compile_kernel(source: str, name: str):
    return torch.cuda._compile_kernel(source, name)


def correct_output(data):
    c = data[-1]
    c.copy_(ref_kernel(data).to(c.device))
    return c
