"""A call's outputs where the parent's check reads them, with the MAC checked on exactly those bytes.

On the check's GPU each output's whole storage (the digest covers the storage) is copied there on a
stream of its own, beside the parent's draw and reference, and the MAC's digest is computed on those
copies there (output_leaves): the check reads the bytes the MAC covers, and no byte between the MAC and
the verdict is read again from memory the worker can reach. Elsewhere (the host, or a device of no
streams) the MAC is checked on the bytes received, and the check gets copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from harness.contract.tensor_tree import storage_bytes


def copy_storage_to(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` on ``device`` with its whole storage copied, and the same dtype, shape, strides and
    offset into it."""
    storage = storage_bytes(tensor).to(device, non_blocking=True)
    return torch.empty(0, dtype=tensor.dtype, device=device).set_(
        storage.untyped_storage(), tensor.storage_offset(), tensor.size(), tensor.stride())


class CheckCopies:
    """One worker session's copies for the check; ``deliver`` per call. Holds the copies' stream."""

    def __init__(self) -> None:
        self._stream: torch.cuda.Stream | None = None

    def deliver(self, tensors: list[Any], device: torch.device | None, verify: Callable[[list[Any]], None],
                meanwhile: Callable[[], None] = lambda: None) -> list[Any]:
        """``tensors`` (entries that are not tensors pass through) where the check on ``device`` (None:
        the host) reads them, after ``verify`` ran on them there; ``meanwhile`` runs once the copies and
        ``verify``'s work are queued, its own GPU work on the check's stream beside them. The check's stream
        then waits for them."""
        if device is None or device.type != "cuda":
            verify(tensors)
            meanwhile()
            return [copy_storage_to(t, device) if device is not None and isinstance(t, torch.Tensor) else t
                    for t in tensors]
        if self._stream is None:
            self._stream = torch.cuda.Stream(device)
        check_stream = torch.cuda.current_stream(device)
        with torch.cuda.stream(self._stream):
            # A tensor already on the check's GPU was copied out of the device snapshot into the parent's memory.
            checked = [copy_storage_to(t, device) if isinstance(t, torch.Tensor) and t.device != device else t
                       for t in tensors]
            verify(checked)
        meanwhile()
        check_stream.wait_stream(self._stream)
        for copy in checked:
            if isinstance(copy, torch.Tensor):
                copy.record_stream(check_stream)  # freed, its memory waits for the check before reuse
        return checked
