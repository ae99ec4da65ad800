"""The one order both sides walk a call's tensors in: the parent stages inputs in it, the core reads them in it."""

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
