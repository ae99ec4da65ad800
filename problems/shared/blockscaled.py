"""What the problems share: seeded block-scaled operands, output buffers, and the output check.

A problem's ``reference.py`` composes these pieces; everything that differs between problems
(shapes, tolerance, value distribution) is data in its ``task.yml``, and everything that differs
between operand formats (NVFP4, MXFP8, blockwise fp8) is data in ``problems/shared/operand_formats.py``.

Inputs are a pure function of (case, seed), generated directly on the target device by the
counter-based generator of ``problems/shared/counter_rng.py``: the CPU and CUDA produce the same bits,
and each operand's data and scales come from their own named stream, so one operand's shape
never shifts another's bits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml

from problems.shared import permuted_scales
from problems.shared.counter_rng import random_words, words_to_bytes
from problems.shared.operand_formats import NVFP4, OperandFormat
from reference.layouts import ceil_div, to_permuted
from reference.triton_cache import prepare_triton


@dataclass(frozen=True)
class ScaleDistribution:
    """A task's ``scale_log2`` range; how each scale format draws from it: ``OperandFormat.scales``."""

    log2_min: float
    log2_max: float


@dataclass(frozen=True)
class Tolerance:
    """An element passes when |got - expected| <= atol + rtol * |expected|; NaN/inf must match."""

    rtol: float
    atol: float


@dataclass(frozen=True)
class Operand:
    """One operand as the contest hands it over (NVFP4 shown; other formats alike)."""

    data: torch.Tensor  # (rows, K/2, L) float4_e2m1fn_x2, a view of (L, rows, K/2) storage
    scales: torch.Tensor  # (rows, K/16, L) float8_e4m3fn, a view of (L, rows, K/16) storage

    @functools.cached_property
    def permuted(self) -> torch.Tensor:
        """(32, 4, rest_rows, 4, rest_k, L): the scales as CuTe kernels take them (``random_operands`` with
        ``permuted`` makes every operand's at once)."""
        return to_permuted(self.scales)

    @property
    def matrix(self) -> torch.Tensor:
        """The data of a single-batch operand as a (rows, K) matrix (row-major)."""
        return self.data[:, :, 0]

    @property
    def scale_matrix(self) -> torch.Tensor:
        """The scales of a single-batch operand as a (scale rows, K blocks) matrix (row-major)."""
        return self.scales[:, :, 0]


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


def target_device(device: torch.device | str | None) -> torch.device:
    """``device``, or CUDA when one is visible and none was named."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


@dataclass(frozen=True)
class OperandSpec:
    """One operand to draw: its stream name (scales: "sf" + name), its shape and its format."""

    name: str
    rows: int
    k: int
    batches: int = 1
    fmt: OperandFormat = NVFP4

    def __post_init__(self) -> None:
        if self.k % self.fmt.block[1]:
            raise ValueError(f"K={self.k} must be a multiple of {self.fmt.block[1]} ({self.fmt.name})")

    @property
    def data_shape(self) -> tuple[int, int, int]:
        return (self.batches, self.rows, self.k // self.fmt.elements_per_byte)

    @property
    def scale_shape(self) -> tuple[int, int, int]:
        return (self.batches, ceil_div(self.rows, self.fmt.block[0]), self.k // self.fmt.block[1])


def random_operands(
    seed: int, specs: list[OperandSpec], dist: ScaleDistribution, device: torch.device, permuted: bool = False
) -> list[Operand]:
    """(rows, K, L) operands in the contest's K-major layout, with their (scale rows, K blocks, L) scales.

    Operand ``name``'s bytes are stream ``name`` of ``seed`` and its scales stream ``"sf" + name``
    (``fmt.words_per_scale`` words each): an operand's bits depend only on the seed, its name,
    its format and its own shape. ``permuted``: each operand's ``permuted`` scales made here, all at once.
    """
    streams = [(spec.name, -(-math.prod(spec.data_shape) // 4)) for spec in specs]
    streams += [(f"sf{spec.name}", spec.fmt.words_per_scale * math.prod(spec.scale_shape)) for spec in specs]
    words = random_words(seed, streams, device)
    scales: list[torch.Tensor] = [torch.empty(0)] * len(specs)
    for fmt in dict.fromkeys(spec.fmt for spec in specs):  # each format's scales in one go
        picked = [i for i, spec in enumerate(specs) if spec.fmt == fmt]
        made = fmt.scales([words[len(specs) + i] for i in picked], [specs[i].scale_shape for i in picked],
                          dist.log2_min, dist.log2_max)
        for i, one in zip(picked, made):
            scales[i] = one
    operands = []
    for spec, data_words, scale in zip(specs, words[: len(specs)], scales):
        raw = spec.fmt.element_bytes(words_to_bytes(data_words, spec.data_shape))
        operands.append(Operand(data=raw.permute(1, 2, 0).view(spec.fmt.element_dtype), scales=scale.permute(1, 2, 0)))
    if permuted:  # every operand's permuted scales now, in one kernel launch on CUDA (permuted_scales)
        for operand, layout in zip(operands, permuted_scales.permuted([o.scales for o in operands])):
            operand.__dict__["permuted"] = layout  # the cached_property's own slot
    return operands


def poisoned_output(
    shape: tuple[int, ...], batches: int | None, device: torch.device, dtype: torch.dtype = torch.float16
) -> torch.Tensor:
    """The pre-allocated (*shape, L) output (or ``shape`` when ``batches`` is None), filled with NaN
    so unwritten elements show."""
    if batches is None:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    return torch.full((batches, *shape), float("nan"), dtype=dtype, device=device).permute(1, 2, 0)


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor {tuple(value.shape)} {value.dtype} on {value.device}"
    return type(value).__name__


def _shape_error(got: Any, expected: torch.Tensor, name: str) -> str:
    """Why ``got`` cannot be compared element-wise with ``expected`` ("" when it can)."""
    if not isinstance(got, torch.Tensor):
        return f"{name}: expected a tensor, got {_describe(got)}"
    if tuple(got.shape) != tuple(expected.shape):
        return f"{name}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.dtype != expected.dtype:
        return f"{name}: dtype {got.dtype}, expected {expected.dtype}"
    return ""


def _within(got: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> tuple[torch.Tensor, ...]:
    """(ok mask, got, expected, |error|, allowed), float64 where the expected output lives.

    ``got`` crosses to that device in its own dtype and is widened there: widening a host tensor
    first would convert on the CPU and move four times its bytes (the parent's outputs are host
    tensors; the fp8 GEMM's 200 MB output paid about 170 ms a call for it, docs/results.md run 14).
    Only the error and the allowance need float64; the NaN, infinity and equality tests read the
    outputs in their own dtype (exact: widening a float changes none of them), and the float64
    temporaries are reused in place, so that a large output pays fewer passes over its widened bytes."""
    got = got.detach().to(expected.device)
    expected = expected.detach()
    exp64 = expected.to(torch.float64)
    got64 = got.to(torch.float64)
    error = (got64 - exp64).abs_()
    allowed = exp64.abs().mul_(tolerance.rtol).add_(tolerance.atol)  # atol + rtol * |expected|, rounded alike
    ok = (error <= allowed) & got.isfinite() & expected.isfinite()
    ok |= expected.isinf() & (got == expected)  # the same infinity
    ok |= got.isnan() & expected.isnan()
    return ok, got64, exp64, error, allowed


def _mismatch_text(got: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance, name: str) -> str:
    """The message of a failed comparison: how many elements, the worst one, the largest errors."""
    ok, got64, exp64, error, allowed = _within(got, expected, tolerance)
    mismatches = int((~ok).sum())
    excess = torch.where(ok, torch.full_like(error, -math.inf), torch.nan_to_num(error - allowed, nan=math.inf))
    worst = int(excess.flatten().argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), got.shape))
    rel = error / exp64.abs().clamp_min(1e-30)
    return (
        f"{name}: {mismatches} of {got.numel()} elements mismatch; worst at {index}: "
        f"got {got64.flatten()[worst].item():.6g}, expected {exp64.flatten()[worst].item():.6g}; "
        f"max abs error {torch.nan_to_num(error, nan=math.inf).max().item():.3g}, "
        f"max rel error {torch.nan_to_num(rel, nan=math.inf).max().item():.3g}"
    )


FUSED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
"""Outputs a GPU judges with the fused kernel (problems/shared/compare_triton.py); others by _within."""
FUSED_BLOCK = 4096
"""Elements per program of the fused kernel."""


@functools.lru_cache(maxsize=16)
def _limits(tolerance: Tolerance, device: torch.device) -> torch.Tensor:
    """(atol, rtol) as float64 on ``device``: one small copy per tolerance, not one per check."""
    return torch.tensor([tolerance.atol, tolerance.rtol], dtype=torch.float64).to(device)


@functools.cache
def _mismatch_kernel() -> Any:
    """The fused kernel, imported once (importing it imports triton), Triton prepared first."""
    prepare_triton()
    from problems.shared.compare_triton import mismatch_kernel

    return mismatch_kernel


def fused_mismatches(got: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> torch.Tensor:
    """How many elements of ``got`` break the rule, counted by one Triton kernel where ``expected`` lives
    (a 0-dim int64 tensor, not read back): the same verdict as _within's float64 passes, each element
    read once in its own dtype. Both are laid out row-major first where they are not."""
    got = got.detach().to(expected.device).contiguous()
    expected = expected.detach().contiguous()
    bf16 = expected.dtype == torch.bfloat16  # handed over as its bits (compare_triton.widened)
    if bf16:
        got, expected = got.view(torch.int16), expected.view(torch.int16)
    programs = max(1, -(-expected.numel() // FUSED_BLOCK))
    counts = torch.empty(programs, dtype=torch.int32, device=expected.device)
    _mismatch_kernel()[(programs,)](got, expected, _limits(tolerance, expected.device), counts, expected.numel(),
                                    BLOCK=FUSED_BLOCK, BF16_BITS=bf16, enable_fp_fusion=False)
    return counts.sum(dtype=torch.int64)


def _fusable(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """Whether the fused kernel judges this pair: a float output of the expected dtype, checked on a GPU."""
    return expected.device.type == "cuda" and expected.dtype in FUSED_DTYPES and got.dtype == expected.dtype


def _mismatches(got: torch.Tensor, expected: torch.Tensor, tolerance: Tolerance) -> torch.Tensor:
    """How many elements break the rule (0-dim, where ``expected`` lives): on a GPU one fused kernel
    for the float outputs, else torch's float64 passes."""
    if _fusable(got, expected):
        return fused_mismatches(got, expected, tolerance)
    return (~_within(got, expected, tolerance)[0]).sum()


def _all_pass_together(gots: list[Any], expecteds: list[torch.Tensor], tolerance: Tolerance,
                       names: list[str]) -> bool:
    """Whether several outputs all pass, by one fused count over all of them laid end to end (the rule is per
    element, so their sum is zero exactly when each count is): one kernel launch for a grouped problem's G
    outputs where one per output cost the parent about 0.1 ms each (issue 33). False where they cannot be
    judged so (another dtype, a wrong shape) or something fails: the caller judges them one by one."""
    if len(gots) < 2 or any(_shape_error(g, e, n) or not _fusable(g, e) for g, e, n in zip(gots, expecteds, names)):
        return False
    device = expecteds[0].device
    if any(e.device != device for e in expecteds):
        return False
    got = torch.cat([g.detach().to(device).reshape(-1) for g in gots])
    expected = torch.cat([e.detach().reshape(-1) for e in expecteds])
    return int(fused_mismatches(got, expected, tolerance)) == 0


def _judge(gots: list[Any], expecteds: list[torch.Tensor], tolerance: Tolerance,
           names: list[str]) -> tuple[int, str]:
    """(index of the first output that fails, its message), or (-1, "") when all pass.

    Several outputs that pass are judged by one count over all of them (``_all_pass_together``); otherwise
    every output's mismatch count is computed where the expected outputs live and read back in
    one transfer (one host sync for a grouped problem's G outputs, not G); only a failure pays
    for its message."""
    if _all_pass_together(gots, expecteds, tolerance, names):
        return -1, ""
    counts = []
    for got, expected, name in zip(gots, expecteds, names):
        if _shape_error(got, expected, name):
            break  # the outputs before it are judged first, as one by one
        counts.append(_mismatches(got, expected, tolerance))
    for index, count in enumerate(torch.stack(counts).tolist() if counts else []):
        if count:
            return index, _mismatch_text(gots[index], expecteds[index], tolerance, names[index])
    if len(counts) < len(gots):
        return len(counts), _shape_error(gots[len(counts)], expecteds[len(counts)], names[len(counts)])
    return -1, ""


def compare_tensor(got: Any, expected: torch.Tensor, tolerance: Tolerance, name: str = "output") -> tuple[bool, str]:
    """Element-wise check of one output tensor; the message names the worst element."""
    failed, message = _judge([got], [expected], tolerance, [name])
    if failed >= 0:
        return False, message
    return True, f"{name}: all {got.numel()} elements within atol={tolerance.atol:g} rtol={tolerance.rtol:g}"


def compare_outputs(got: Any, expected: Any, tolerance: Tolerance) -> tuple[bool, str]:
    """Check a tensor or a list of tensors (grouped problems) against the expected output."""
    if isinstance(expected, torch.Tensor):
        return compare_tensor(got, expected, tolerance)
    if not isinstance(got, (list, tuple)):
        return False, f"expected a list of {len(expected)} tensors, got {_describe(got)}"
    if len(got) != len(expected):
        return False, f"expected a list of {len(expected)} tensors, got {len(got)}"
    failed, message = _judge(list(got), list(expected), tolerance, [f"output[{i}]" for i in range(len(expected))])
    if failed >= 0:
        return False, message
    return True, f"all {len(expected)} outputs within atol={tolerance.atol:g} rtol={tolerance.rtol:g}"


def make_checker(
    ref_kernel: Callable[[Any], Any], tolerance: Tolerance
) -> Callable[..., tuple[bool, str]]:
    """check_implementation(data, output) -> (ok, message) for one problem; never raises.

    ``expected``: ref_kernel(data), when the caller already has it (the parent keeps it for a
    case listed twice: harness.judge.verdict.call_checker)."""

    def check_implementation(data: Any, output: Any, expected: Any = None) -> tuple[bool, str]:
        return compare_outputs(output, ref_kernel(data) if expected is None else expected, tolerance)

    return check_implementation
