"""Speed of light: time = max(bytes / bandwidth, flops / math rate), computed, never looked up.

bytes and flops come from the problem's task.yml (``speed_of_light``: arithmetic over the case's
keys, evaluated here by a small AST walker that accepts numbers, the case's names and
+ - * / // ** only). Bandwidth and math rate come from harness/devices.yml under a convention;
the default is the contest's (96% of peak DRAM bandwidth, tensor rates at a 1.5 GHz clock),
which reproduces its 15 published B200 figures. See docs/speed_of_light.md.
"""

from __future__ import annotations

import argparse
import ast
import functools
import math
import operator
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.task import Task, TaskError, load_task, shape_text

DEVICES_PATH = Path(__file__).resolve().with_name("devices.yml")
MAX_EXPRESSION_CHARS = 2000
EXACT_NVFP4_NOTE = (
    "no FP4 tensor cores: the fp16/bf16 dense rate bounds an exact NVFP4 product "
    "(e2m1 x e4m3 has at most 6 significant bits: exact in fp16/bf16; fp8 e4m3 cannot hold it)"
)


class UnknownDeviceError(LookupError):
    """A device name that harness/devices.yml does not know; the message says how to add it."""


class DeviceTableError(ValueError):
    """harness/devices.yml is malformed; the message names the entry and the field."""


# -- the expression evaluator ---------------------------------------------------------------
_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def evaluate_expression(expression: str, names: Mapping[str, Any]) -> float:
    """Value of an arithmetic expression over ``names``; anything but arithmetic is a TaskError.

    Why not eval(): task.yml is data, and data must not run code (``__import__('os')``).
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise TaskError(f"speed_of_light expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise TaskError(f"speed_of_light expression {expression!r} is not valid arithmetic") from None
    try:
        return float(_evaluate(tree.body, names, expression))
    except (ZeroDivisionError, OverflowError, RecursionError) as error:
        raise TaskError(f"speed_of_light expression {expression!r} cannot be evaluated: {error}") from None


def _evaluate(node: ast.AST, names: Mapping[str, Any], expression: str) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise TaskError(f"speed_of_light expression {expression!r} uses '{node.id}', which is not a "
                            f"case key (keys: {', '.join(names)})")
        value = names[node.id]
        if type(value) not in (int, float):
            raise TaskError(f"speed_of_light expression {expression!r}: case key '{node.id}' is "
                            f"{type(value).__name__}, not a number (grouped lists need per_group: true)")
        return float(value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, names, expression), _evaluate(node.right, names, expression)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, names, expression))
    raise TaskError(f"speed_of_light expression {expression!r}: {type(node).__name__} is not allowed; "
                    "use numbers, case keys, + - * / // ** and parentheses only")


def work(task: Task, case: Mapping[str, Any]) -> tuple[float, float]:
    """(bytes, flops) of one case by the task's formula; per_group sums over the grouped lists."""
    spec = task.speed_of_light
    if not spec.per_group:
        return evaluate_expression(spec.bytes, case), evaluate_expression(spec.flops, case)
    lengths = {len(v) for v in case.values() if isinstance(v, (list, tuple))}
    if len(lengths) != 1:
        raise TaskError(f"{task.directory / 'task.yml'}: per_group needs list-valued keys of one common "
                        f"length, got case {case!r}")
    total_bytes = total_flops = 0.0
    for index in range(lengths.pop()):
        group = {k: (v[index] if isinstance(v, (list, tuple)) else v) for k, v in case.items()}
        total_bytes += evaluate_expression(spec.bytes, group)
        total_flops += evaluate_expression(spec.flops, group)
    return total_bytes, total_flops


# -- the device table -----------------------------------------------------------------------
@dataclass(frozen=True)
class Convention:
    name: str
    bandwidth_fraction: float
    tensor_clock_hz: float | None  # None: the rates as the datasheet prints them


@dataclass(frozen=True)
class Device:
    key: str
    torch_names: tuple[str, ...]
    sm_count: int | None
    boost_clock_hz: float | None
    rated_clock_hz: float | None
    dram_bytes_per_s: float
    l2_bytes: int | None
    fp16_flops_per_clock_per_sm: float | None
    tensor_dense_flops_per_s: dict[str, float | None]
    vector_flops_per_s: dict[str, float]


@dataclass(frozen=True)
class DeviceTable:
    devices: dict[str, Device]
    conventions: dict[str, Convention]
    default_convention: str


def _number(value: Any, where: str, required: bool = False) -> float | None:
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DeviceTableError(f"{DEVICES_PATH.name}: {where} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise DeviceTableError(f"{DEVICES_PATH.name}: {where} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise DeviceTableError(f"{DEVICES_PATH.name}: {where} must be positive, got {value!r}")
    return number


def _device(key: str, spec: dict[str, Any]) -> Device:
    def field(name: str, required: bool = False) -> float | None:
        return _number(spec.get(name), f"{key}.{name}", required)

    rates = {dtype: _number(rate, f"{key}.tensor_dense_flops_per_s.{dtype}")
             for dtype, rate in (spec.get("tensor_dense_flops_per_s") or {}).items()}
    vector = {dtype: _number(rate, f"{key}.vector_flops_per_s.{dtype}", True)
              for dtype, rate in (spec.get("vector_flops_per_s") or {}).items()}
    device = Device(
        key=key,
        torch_names=tuple(str(n) for n in spec.get("torch_names") or ()),
        sm_count=int(field("sm_count")) if spec.get("sm_count") is not None else None,
        boost_clock_hz=field("boost_clock_hz"),
        rated_clock_hz=field("rated_clock_hz"),
        dram_bytes_per_s=float(field("dram_bytes_per_s", required=True) or 0.0),
        l2_bytes=int(field("l2_bytes")) if spec.get("l2_bytes") is not None else None,
        fp16_flops_per_clock_per_sm=field("fp16_flops_per_clock_per_sm"),
        tensor_dense_flops_per_s=rates,
        vector_flops_per_s={k: float(v) for k, v in vector.items() if v is not None},
    )
    if any(rates.values()) and device.rated_clock_hz is None:
        raise DeviceTableError(f"{DEVICES_PATH.name}: {key} has tensor rates but no rated_clock_hz")
    return device


@functools.lru_cache(maxsize=4)
def load_table(path: Path = DEVICES_PATH) -> DeviceTable:
    """The parsed, validated device table (cached: it is read once per process)."""
    spec = yaml.safe_load(path.read_text())
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        raise DeviceTableError(f"{path.name}: expected 'devices' and 'conventions' mappings")
    conventions = {
        name: Convention(name, float(_number(c.get("bandwidth_fraction"), f"{name}.bandwidth_fraction", True) or 1),
                         _number(c.get("tensor_clock_hz"), f"{name}.tensor_clock_hz"))
        for name, c in (spec.get("conventions") or {}).items()
    }
    default = str(spec.get("default_convention", ""))
    if default not in conventions:
        raise DeviceTableError(f"{path.name}: default_convention '{default}' is not in conventions")
    devices = {str(key): _device(str(key), entry or {}) for key, entry in spec["devices"].items()}
    return DeviceTable(devices, conventions, default)


def _normal(name: str) -> str:
    return " ".join(str(name).split()).casefold()


def resolve_device(name: str) -> str:
    """Table key for a table key or a torch.cuda.get_device_name() spelling (case-insensitive)."""
    table = load_table()
    wanted = _normal(name)
    for key, device in table.devices.items():
        if wanted == _normal(key) or wanted in (_normal(n) for n in device.torch_names):
            return key
    shown = " ".join(str(name).split())
    raise UnknownDeviceError(
        f"unknown device '{shown}': add it to harness/devices.yml (a new entry with its sourced datasheet "
        f"figures, or '{shown}' under an existing entry's torch_names); known: {', '.join(table.devices)}"
    )


def current_device_name() -> str:
    """torch.cuda.get_device_name() when CUDA is available, else "cpu"."""
    import torch  # here, not at the top: `sol` on a named device should not pay for importing torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"


# -- the model ------------------------------------------------------------------------------
@dataclass(frozen=True)
class MathRate:
    dtype: str
    flops_per_s: float
    note: str


def convention_clock_hz(device: Device, convention: Convention) -> float | None:
    """The SM clock the convention runs this device at: its tensor_clock_hz, but never above the
    device's boost clock (an A100 cannot reach 1.5 GHz: its rates stay at its 1.41 GHz)."""
    if convention.tensor_clock_hz is None or device.rated_clock_hz is None:
        return None
    if device.boost_clock_hz is not None:
        return min(convention.tensor_clock_hz, device.boost_clock_hz)
    return convention.tensor_clock_hz


def tensor_rate(device: Device, dtype: str, convention: Convention) -> float | None:
    """A dense tensor rate under the convention: scaled from rated_clock_hz to the convention's clock."""
    rate = device.tensor_dense_flops_per_s.get(dtype)
    if rate is None:
        return None
    clock_hz = convention_clock_hz(device, convention)
    return rate if clock_hz is None or device.rated_clock_hz is None else rate * clock_hz / device.rated_clock_hz


def nvfp4_math_rate(device: Device, convention: Convention) -> MathRate:
    """The fastest rate at which the exact NVFP4 product can be computed on this device."""
    fp4 = tensor_rate(device, "fp4", convention)
    if fp4:
        return MathRate("fp4", fp4, "FP4 tensor cores, dense")
    halves = [(rate, dtype) for dtype in ("fp16", "bf16") if (rate := tensor_rate(device, dtype, convention))]
    if halves:
        rate, dtype = max(halves)
        return MathRate(dtype, rate, f"{dtype} tensor cores, dense; {EXACT_NVFP4_NOTE}")
    if "fp32" in device.vector_flops_per_s:
        return MathRate("fp32", device.vector_flops_per_s["fp32"], "no tensor cores: fp32 vector rate")
    raise DeviceTableError(f"{DEVICES_PATH.name}: {device.key} has no fp4/fp16/bf16 tensor rate and no fp32 rate")


@dataclass(frozen=True)
class SolBreakdown:
    bytes: float
    flops: float
    memory_s: float
    math_s: float
    bound: str  # "memory" | "math"
    seconds: float
    math_dtype: str
    device: str = ""
    convention: str = ""
    bandwidth_bytes_per_s: float = 0.0
    math_flops_per_s: float = 0.0
    math_note: str = ""


def _convention(name: str | None) -> Convention:
    table = load_table()
    chosen = name or table.default_convention
    if chosen not in table.conventions:
        raise UnknownDeviceError(f"unknown convention '{chosen}': choose one of {', '.join(table.conventions)} "
                                 "(harness/devices.yml)")
    return table.conventions[chosen]


def breakdown(task: Task | str, case: Mapping[str, Any], device: str, convention: str | None = None) -> SolBreakdown:
    """Both bounds of one case on one device, and which one binds."""
    task = load_task(task) if isinstance(task, str) else task
    entry = load_table().devices[resolve_device(device)]
    rules = _convention(convention)
    n_bytes, flops = work(task, case)
    bandwidth = entry.dram_bytes_per_s * rules.bandwidth_fraction
    rate = nvfp4_math_rate(entry, rules)
    memory_s, math_s = n_bytes / bandwidth, flops / rate.flops_per_s
    return SolBreakdown(
        bytes=n_bytes, flops=flops, memory_s=memory_s, math_s=math_s,
        bound="memory" if memory_s >= math_s else "math", seconds=max(memory_s, math_s),
        math_dtype=rate.dtype, device=entry.key, convention=rules.name,
        bandwidth_bytes_per_s=bandwidth, math_flops_per_s=rate.flops_per_s, math_note=rate.note,
    )


@functools.lru_cache(maxsize=32)
def _task(problem: str) -> Task:
    return load_task(problem)


def speed_of_light(problem: str, case: Mapping[str, Any], device: str) -> float:
    """Seconds: the speed of light of one case of a problem on a device (default convention)."""
    task = problem if isinstance(problem, Task) else _task(str(problem))
    return breakdown(task, case, device).seconds


# -- the command ----------------------------------------------------------------------------
def _table_lines(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def render(task: Task, device: str, convention: str | None = None) -> str:
    """The benchmark table of a problem on a device; B200 rows carry the published value beside."""
    entry = load_table().devices[resolve_device(device)]
    rules = _convention(convention)
    results = [breakdown(task, case, entry.key, rules.name) for case in task.benchmarks]
    first = results[0] if results else breakdown(task, task.tests[0], entry.key, rules.name)
    clock_hz = convention_clock_hz(entry, rules)
    clock = (f", tensor rates scaled from {entry.rated_clock_hz / 1e9:.4g} GHz to {clock_hz / 1e9:.4g} GHz"
             if clock_hz and entry.rated_clock_hz and clock_hz != entry.rated_clock_hz else "")
    nominal = " (nominal figures, not measured)" if entry.key == "cpu" else ""
    lines = [
        f"speed of light: {task.name} on {entry.key}{nominal}, {rules.name} convention",
        "  time = max(bytes / bandwidth, flops / math rate)",
        f"  bandwidth {first.bandwidth_bytes_per_s:.4g} B/s = {rules.bandwidth_fraction:.0%} of "
        f"{entry.dram_bytes_per_s:.4g} B/s peak DRAM",
        f"  math rate {first.math_flops_per_s:.4g} FLOP/s: {first.math_note}{clock}",
    ]
    published = task.speed_of_light.published_b200_us if entry.key == "B200" else ()
    header = ["shape", "bytes", "flops", "bound", "SOL us"] + (["published B200 us", "diff"] if published else [])
    rows = [header]
    for index, (case, result) in enumerate(zip(task.benchmarks, results)):
        row = [shape_text(case), f"{result.bytes:,.0f}", f"{result.flops:.4g}", result.bound,
               f"{result.seconds * 1e6:.3f}"]
        if published:
            row += [f"{published[index]:.3f}", f"{100 * (result.seconds * 1e6 / published[index] - 1):+.2f}%"]
        rows.append(row)
    lines += _table_lines(rows)
    if results:
        geomean_us = math.exp(sum(math.log(r.seconds * 1e6) for r in results) / len(results))
        lines.append(f"geometric mean of the SOL: {geomean_us:.3f} us")
    return "\n".join(lines)


def _handle(args: argparse.Namespace) -> int:
    from harness.results import ExitCode

    try:
        task = load_task(args.problem)
        device = args.device or current_device_name()
        print(render(task, device, args.convention))
    except (TaskError, UnknownDeviceError, DeviceTableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sol", help="speed-of-light table of a problem's benchmarks on a device")
    parser.add_argument("problem", help="problem name (a folder under problems/)")
    parser.add_argument("--device", help="a harness/devices.yml key (B200, 'H100 SXM', cpu, ...) or a torch "
                        "device name; default: this machine's GPU, else cpu")
    parser.add_argument("--convention", help="contest (default: 96%% of DRAM peak, tensor rates at 1.5 GHz) "
                        "or datasheet (the peaks as printed)")
    parser.set_defaults(handler=_handle)
