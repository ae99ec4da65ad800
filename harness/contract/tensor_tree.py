"""The one order both sides walk a call's tensors in: the parent stages inputs in it, the core reads them in it;
and a tensor's whole storage, the bytes the staged inputs and the output digest cover."""

from __future__ import annotations

from typing import Any


def tensors_in(tree: Any) -> list[Any]:
    """Every tensor of ``tree`` (tensors, lists and tuples nested), depth first, in order. torch is
    imported here, not at the top: the parent spawns its worker before importing torch."""
    import torch

    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in tensors_in(item)]
    return []


def storage_bytes(tensor: Any) -> Any:
    """The tensor's whole storage as a flat uint8 tensor on its device, without a copy."""
    import torch

    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())
