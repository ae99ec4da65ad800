"""Cheat 3, passing the check through a harness bug: return more outputs than asked (a tensor
problem answered with a list whose first element is right), hoping only the first is looked at."""

import _honest
import torch


def custom_kernel(data):
    c = _honest.gemv(data)
    return [c, torch.zeros_like(c)]
