"""Speed of light: time = max(bytes / bandwidth, flops / math rate), computed, never looked up.

bytes and flops come from the problem's task.yml (``speed_of_light``: arithmetic over the case's
keys, evaluated by ``harness.contract.work_formula``). Bandwidth and math rate come from
harness/sol/devices.yml under a convention;
the default is the contest's (96% of peak DRAM bandwidth, tensor rates at a 1.5 GHz clock),
which reproduces its 15 published B200 figures. See docs/speed_of_light.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.contract.task_spec import Task, load_task
from harness.contract.work_formula import work

DEVICES_PATH = Path(__file__).resolve().with_name("devices.yml")
EXACT_NVFP4_NOTE = (
    "no FP4 tensor cores: the fp16/bf16 dense rate bounds an exact NVFP4 product "
    "(e2m1 x e4m3 has at most 6 significant bits: exact in fp16/bf16; fp8 e4m3 cannot hold it)"
)


class UnknownDeviceError(LookupError):
    """A device name that harness/sol/devices.yml does not know; the message says how to add it."""


class DeviceTableError(ValueError):
    """harness/sol/devices.yml is malformed; the message names the entry and the field."""


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
        f"unknown device '{shown}': add it to harness/sol/devices.yml (a new entry with its sourced datasheet "
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


def _exact_in_halves(device: Device, convention: Convention, why: str) -> MathRate | None:
    halves = [(rate, dtype) for dtype in ("fp16", "bf16") if (rate := tensor_rate(device, dtype, convention))]
    if not halves:
        return None
    rate, dtype = max(halves)
    return MathRate(dtype, rate, f"{dtype} tensor cores, dense; {why}")


def math_rate(device: Device, operands: str, convention: Convention) -> MathRate:
    """The fastest rate at which the exact product of ``operands`` (task.yml speed_of_light.operands)
    can be computed on this device: its own tensor rate, else fp16/bf16 (both formats' products are
    exact there), else the fp32 vector rate."""
    if operands == "fp32":  # plain CUDA-core arithmetic (the timing ladder): the vector rate alone
        if "fp32" not in device.vector_flops_per_s:
            raise DeviceTableError(f"{DEVICES_PATH.name}: {device.key} has no fp32 vector rate")
        return MathRate("fp32", device.vector_flops_per_s["fp32"], "fp32 CUDA cores (no tensor cores)")
    dtype = "fp4" if operands == "nvfp4" else "fp8"
    own = tensor_rate(device, dtype, convention)
    if own:
        return MathRate(dtype, own, f"{dtype.upper()} tensor cores, dense")
    why = EXACT_NVFP4_NOTE if operands == "nvfp4" else "no fp8 tensor cores: e4m3 is exact in fp16/bf16"
    halves = _exact_in_halves(device, convention, why)
    if halves:
        return halves
    if "fp32" in device.vector_flops_per_s:
        return MathRate("fp32", device.vector_flops_per_s["fp32"], "no tensor cores: fp32 vector rate")
    raise DeviceTableError(f"{DEVICES_PATH.name}: {device.key} has no {operands}, fp16/bf16 or fp32 rate")


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


def convention_named(name: str | None) -> Convention:
    table = load_table()
    chosen = name or table.default_convention
    if chosen not in table.conventions:
        raise UnknownDeviceError(f"unknown convention '{chosen}': choose one of {', '.join(table.conventions)} "
                                 "(harness/sol/devices.yml)")
    return table.conventions[chosen]


def breakdown(task: Task | str, case: Mapping[str, Any], device: str, convention: str | None = None) -> SolBreakdown:
    """Both bounds of one case on one device, and which one binds."""
    task = load_task(task) if isinstance(task, str) else task
    entry = load_table().devices[resolve_device(device)]
    rules = convention_named(convention)
    n_bytes, flops = work(task, case)
    bandwidth = entry.dram_bytes_per_s * rules.bandwidth_fraction
    rate = math_rate(entry, task.speed_of_light.operands, rules)
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
