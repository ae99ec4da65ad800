"""Planted: monkeypatches of torch, one of them through an alias of torch.cuda."""

import torch

from reference import ref_kernel

cuda = torch.cuda
cuda.synchronize = lambda *args, **kwargs: None
_clone = torch.Tensor.clone
torch.Tensor.clone = lambda self, *args, **kwargs: self


def custom_kernel(data):
    return ref_kernel(data)
