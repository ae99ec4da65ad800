"""Cheat 9: search the garbage collector's objects for the expected output (a tensor of c's shape
and dtype that is not c and holds numbers) and return it. Expected outputs exist only in the
parent, so nothing is found and c goes back untouched."""

import gc

import torch


def custom_kernel(data):
    c = data[-1]
    for obj in gc.get_objects():
        if (isinstance(obj, torch.Tensor) and obj is not c and obj.shape == c.shape and obj.dtype == c.dtype
                and not obj.isnan().any()):
            return obj.clone()
    return c
