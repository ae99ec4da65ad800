"""The honest twin of the copy-engine row (s21): the shipped Triton GEMV on copies of A and its scales
that it makes first, on the caller's stream (a stand-in for the re-layout copies real submissions
make), so that the copies are timed. s21 makes the same copies on a side stream."""

import s17_honest_triton_twin as triton_twin
import torch

staged = {}


def staging(data):
    """Persistent buffers of A's and its scales' layout (empty_like keeps dense strides: one memcpy each)."""
    a, _, sfa, *_ = data
    key = (a.device, a.shape, sfa.shape)
    if key not in staged:
        staged[key] = (torch.empty_like(a), torch.empty_like(sfa))
    return staged[key]


def gemv_on(data, a, sfa):
    _, b, _, sfb, sfa_permuted, sfb_permuted, c = data
    return triton_twin.custom_kernel((a, b, sfa, sfb, sfa_permuted, sfb_permuted, c))


def custom_kernel(data):
    a, sfa = staging(data)
    a.copy_(data[0])
    sfa.copy_(data[2])
    return gemv_on(data, a, sfa)
