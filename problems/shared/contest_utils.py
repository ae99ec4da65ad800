"""The contest runner's ``utils`` module, as submissions import it (``from utils import ...``).

In the contest's folder a ``utils.py`` sits next to every submission, and many real submissions
use it to test themselves locally. The worker registers this module under the name
``utils`` so those files run unchanged. Same names and behaviour as the contest's helpers, our
own code; nothing here decides a verdict (the harness checks outputs in its own process).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

L2_FLUSH_BYTES = 256 << 20
"""Larger than the L2 of every GPU the contest ran on (B200: 126 MB)."""


def set_seed(seed: int = 42) -> None:
    """Seed Python, numpy and torch (every device) at once."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def get_device(use_cuda: bool = True) -> torch.device:
    """The GPU when there is one (and it is wanted), else the CPU."""
    return torch.device("cuda") if use_cuda and torch.cuda.is_available() else torch.device("cpu")


class DeterministicContext:
    """Deterministic torch kernels inside the block, the previous settings restored after it."""

    def __enter__(self) -> DeterministicContext:
        self._cudnn = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
        self._algorithms = torch.are_deterministic_algorithms_enabled()
        self._workspace = os.environ.get("CUBLAS_WORKSPACE_CONFIG")
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
        torch.use_deterministic_algorithms(True, warn_only=True)
        return self

    def __exit__(self, *exc: object) -> None:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = self._cudnn
        torch.use_deterministic_algorithms(self._algorithms)
        if self._workspace is None:
            os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
        else:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = self._workspace


def clear_l2_cache(device: torch.device | str | None = None) -> None:
    """Evict the GPU's L2 by writing a buffer larger than it (no-op on the CPU)."""
    if not torch.cuda.is_available():
        return
    torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device or "cuda").fill_(0)


def _mismatch_lines(received: torch.Tensor, mismatched: torch.Tensor, expected: torch.Tensor,
                    max_print: int) -> list[str]:
    count = int(mismatched.count_nonzero())
    lines = [f"Number of mismatched elements: {count}"]
    for index in torch.nonzero(mismatched)[:max_print]:
        where = tuple(index.tolist())
        lines.append(f"ERROR at {where}: {received[where]} {expected[where]}")
    if count > max_print:
        lines.append(f"... and {count - max_print} more mismatched elements.")
    return lines


@torch.no_grad()
def verbose_allclose(received: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-05, atol: float = 1e-08,
                     max_print: int = 5) -> tuple[bool, list[str]]:
    """Element-wise |received - expected| <= atol + rtol * |expected|; NaN and inf must match."""
    if received.shape != expected.shape:
        return False, ["SIZE MISMATCH"]
    got, want = received.to(torch.float32), expected.to(torch.float32)
    diff = (got - want).abs()
    mismatched = (diff > atol + rtol * want.abs()) | (got.isnan() ^ want.isnan())
    mismatched |= (got.isposinf() ^ want.isposinf()) | (got.isneginf() ^ want.isneginf())
    if bool(mismatched.any()):
        return False, _mismatch_lines(received, mismatched, expected, max_print)
    return True, [f"Maximum error: {diff.max() if diff.numel() else 0.0}"]


@torch.no_grad()
def verbose_allequal(received: torch.Tensor, expected: torch.Tensor, max_print: int = 5) -> tuple[bool, list[str]]:
    """Exact equality, with the first mismatches listed."""
    mismatched = torch.not_equal(received, expected)
    if bool(mismatched.any()):
        return False, _mismatch_lines(received, mismatched, expected, max_print)
    return True, []


def match_reference(data: Any, output: Any, reference: Callable[[Any], Any], rtol: float = 1e-05,
                    atol: float = 1e-08) -> tuple[bool, str]:
    """(ok, message) comparing ``output`` with ``reference(data)``; lists (grouped GEMM) pairwise."""
    expected = reference(data)
    if isinstance(expected, (list, tuple)):
        if not isinstance(output, (list, tuple)) or len(output) != len(expected):
            return False, f"expected a list of {len(expected)} tensors"
        pairs = list(zip(output, expected))
    else:
        pairs = [(output, expected)]
    for got, want in pairs:
        good, reasons = verbose_allclose(got, want, rtol=rtol, atol=atol)
        if not good:
            return False, "\n".join(reasons)
    return True, ""


def make_match_reference(reference: Callable[[Any], Any], **tolerance: float) -> Callable[[Any, Any], tuple[bool, str]]:
    """A ``check_implementation(data, output)`` built on ``match_reference``."""

    def check(data: Any, output: Any) -> tuple[bool, str]:
        return match_reference(data, output, reference=reference, **tolerance)

    return check
