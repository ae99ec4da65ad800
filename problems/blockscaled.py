"""What the four problems share: seeded NVFP4 operands, output buffers, and the output check.

A problem's ``reference.py`` composes these pieces; everything that differs between problems
(shapes, tolerance, value distribution) is data in its ``task.yml``.

Inputs are a pure function of (case, seed): drawn on the CPU from an explicit
``torch.Generator`` and only then copied to the target device, so a CPU check and a GPU check
see the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

from reference.formats import BLOCK_SIZE, FP4, encode_e4m3
from reference.layouts import to_permuted

# Largest fp32 value whose int64 bits are drawn: randint's upper bound is exclusive.
_INT64_LIMIT = 2**63 - 1


@dataclass(frozen=True)
class ScaleDistribution:
    """Block scales are 2**u, u uniform in [log2_min, log2_max], rounded to e4m3."""

    log2_min: float
    log2_max: float


@dataclass(frozen=True)
class Tolerance:
    """An element passes when |got - expected| <= atol + rtol * |expected|; NaN/inf must match."""

    rtol: float
    atol: float


@dataclass(frozen=True)
class Operand:
    """One NVFP4 operand as the contest hands it over."""

    data: torch.Tensor  # (rows, K/2, L) float4_e2m1fn_x2, a view of (L, rows, K/2) storage
    scales: torch.Tensor  # (rows, K/16, L) float8_e4m3fn, a view of (L, rows, K/16) storage
    permuted: torch.Tensor  # (32, 4, rest_rows, 4, rest_k, L) float8_e4m3fn


def read_task_yaml(problem_file: str | Path) -> dict[str, Any]:
    """The task.yml beside a problem's module, as a plain dict."""
    path = Path(problem_file).with_name("task.yml")
    with path.open() as handle:
        return yaml.safe_load(handle)


def numerics(problem_file: str | Path) -> tuple[ScaleDistribution, Tolerance]:
    """The value distribution and tolerance that a problem's task.yml declares."""
    spec = read_task_yaml(problem_file)
    scales = spec["distribution"]["scale_log2"]
    tolerance = spec["tolerance"]
    return ScaleDistribution(*map(float, scales)), Tolerance(float(tolerance["rtol"]), float(tolerance["atol"]))


def generator(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(int(seed))


def random_bytes(gen: torch.Generator, shape: tuple[int, ...]) -> torch.Tensor:
    """Uniform random bytes: every e2m1 code, in both nibbles, equally likely.

    Drawn as int64 words and reinterpreted, several times faster than byte-wise randint.
    """
    count = math.prod(shape)
    words = torch.randint(-_INT64_LIMIT, _INT64_LIMIT, (-(-count // 8),), dtype=torch.int64, generator=gen)
    return words.view(torch.uint8)[:count].reshape(shape)


def random_scales(gen: torch.Generator, shape: tuple[int, ...], dist: ScaleDistribution) -> torch.Tensor:
    exponents = torch.empty(shape, dtype=torch.float32).uniform_(dist.log2_min, dist.log2_max, generator=gen)
    return encode_e4m3(torch.exp2(exponents))


def random_operand(gen: torch.Generator, rows: int, k: int, batches: int, dist: ScaleDistribution) -> Operand:
    """A (rows, K, L) NVFP4 operand in the contest's K-major layout, with its scales."""
    if k % BLOCK_SIZE:
        raise ValueError(f"K={k} must be a multiple of {BLOCK_SIZE}")
    data = random_bytes(gen, (batches, rows, k // 2)).permute(1, 2, 0).view(FP4)
    scales = random_scales(gen, (batches, rows, k // BLOCK_SIZE), dist).permute(1, 2, 0)
    return Operand(data=data, scales=scales, permuted=to_permuted(scales))


def poisoned_output(shape: tuple[int, ...], batches: int) -> torch.Tensor:
    """The pre-allocated (*shape, L) fp16 output, filled with NaN so unwritten elements show."""
    return torch.full((batches, *shape), float("nan"), dtype=torch.float16).permute(1, 2, 0)


def _to_device_tensor(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Copy to ``device`` keeping dtype and strides; fp4 travels as bytes (CPU torch lacks ops)."""
    if t.device == device:
        return t
    raw = t.view(torch.uint8) if t.dtype == FP4 else t
    moved = torch.empty_strided(raw.shape, raw.stride(), dtype=raw.dtype, device=device)
    moved.copy_(raw)
    return moved.view(FP4) if t.dtype == FP4 else moved


def to_device(tree: Any, device: torch.device | str | None) -> Any:
    """Move every tensor of a nested tuple/list structure to ``device`` (default: cuda if any)."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if isinstance(tree, torch.Tensor):
        return _to_device_tensor(tree, device)
    if isinstance(tree, (tuple, list)):
        return type(tree)(to_device(item, device) for item in tree)
    return tree


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor {tuple(value.shape)} {value.dtype} on {value.device}"
    return type(value).__name__


def compare_tensor(got: Any, expected: torch.Tensor, tolerance: Tolerance, name: str = "output") -> tuple[bool, str]:
    """Element-wise check of one output tensor; the message names the worst element."""
    if not isinstance(got, torch.Tensor):
        return False, f"{name}: expected a tensor, got {_describe(got)}"
    if tuple(got.shape) != tuple(expected.shape):
        return False, f"{name}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.dtype != expected.dtype:
        return False, f"{name}: dtype {got.dtype}, expected {expected.dtype}"
    got64 = got.detach().to("cpu", torch.float64)
    exp64 = expected.detach().to("cpu", torch.float64)
    error = (got64 - exp64).abs()
    allowed = tolerance.atol + tolerance.rtol * exp64.abs()
    both_nan = got64.isnan() & exp64.isnan()
    same_inf = got64.isinf() & exp64.isinf() & (got64 == exp64)
    finite = got64.isfinite() & exp64.isfinite()
    ok = both_nan | same_inf | (finite & (error <= allowed))
    mismatches = int((~ok).sum())
    if mismatches == 0:
        return True, f"{name}: all {got.numel()} elements within atol={tolerance.atol:g} rtol={tolerance.rtol:g}"
    excess = torch.where(ok, torch.full_like(error, -math.inf), torch.nan_to_num(error - allowed, nan=math.inf))
    worst = int(excess.flatten().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), got.shape))
    rel = error / exp64.abs().clamp_min(1e-30)
    return False, (
        f"{name}: {mismatches} of {got.numel()} elements mismatch; worst at {index}: "
        f"got {got64.flatten()[worst].item():.6g}, expected {exp64.flatten()[worst].item():.6g}; "
        f"max abs error {torch.nan_to_num(error, nan=math.inf).max().item():.3g}, "
        f"max rel error {torch.nan_to_num(rel, nan=math.inf).max().item():.3g}"
    )


def compare_outputs(got: Any, expected: Any, tolerance: Tolerance) -> tuple[bool, str]:
    """Check a tensor or a list of tensors (grouped problems) against the expected output."""
    if isinstance(expected, torch.Tensor):
        return compare_tensor(got, expected, tolerance)
    if not isinstance(got, (list, tuple)):
        return False, f"expected a list of {len(expected)} tensors, got {_describe(got)}"
    if len(got) != len(expected):
        return False, f"expected a list of {len(expected)} tensors, got {len(got)}"
    for index, (one_got, one_expected) in enumerate(zip(got, expected)):
        ok, message = compare_tensor(one_got, one_expected, tolerance, name=f"output[{index}]")
        if not ok:
            return False, message
    return True, f"all {len(expected)} outputs within atol={tolerance.atol:g} rtol={tolerance.rtol:g}"


def make_checker(
    ref_kernel: Callable[[Any], Any], tolerance: Tolerance
) -> Callable[[Any, Any], tuple[bool, str]]:
    """check_implementation(data, output) -> (ok, message) for one problem; never raises."""

    def check_implementation(data: Any, output: Any) -> tuple[bool, str]:
        return compare_outputs(output, ref_kernel(data), tolerance)

    return check_implementation
