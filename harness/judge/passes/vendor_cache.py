"""The vendor library's time per device, problem and shape: read by every report, written by calibrate.

Kernel authors publish "% of cuBLAS"; the harness shows it beside "% of SOL" when the problem
declares a vendor file (task.yml ``vendor``) and ``python -m harness calibrate --vendor`` timed it
on this GPU (harness.judge.passes.vendor_yardstick). Where the vendor cannot run the product (NVFP4 on
Hopper), the entry keeps the one-line reason, and the report shows it instead of a number.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.contract.task_spec import Task, shape_text

CACHE_PATH = Path(__file__).resolve().parents[3] / "results" / "vendor.json"
CACHE_ENV = "NVFP4_VENDOR_CACHE"
"""Overrides CACHE_PATH (tests, or an organizer keeping the cache beside the database)."""
MEASURE_HINT = "not measured on this GPU: python -m harness calibrate --vendor"


@dataclass(frozen=True)
class VendorTime:
    """The vendor's median on one shape, or why there is none."""

    median_us: float | None
    note: str  # the library's name, or why the column is empty


def cache_path() -> Path:
    return Path(os.environ.get(CACHE_ENV) or CACHE_PATH)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(device_name: str, problem: str, entries: Mapping[str, VendorTime], path: Path | None = None) -> None:
    """Store one problem's vendor times on one device (atomic replace; other entries kept)."""
    path = path or cache_path()
    data = _read(path)
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    data.setdefault(device_name, {})[problem] = {
        shape: {"median_us": entry.median_us, "note": entry.note, "measured_at": when}
        for shape, entry in entries.items()
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    partial.replace(path)


def lookup(task: Task, case: Mapping[str, Any], device_name: str, path: Path | None = None) -> VendorTime:
    """The vendor's time for this shape on this device, or the reason the report shows instead."""
    return lookup_cases(task, [case], device_name, path)[0]


def lookup_cases(task: Task, cases: Sequence[Mapping[str, Any]], device_name: str,
                 path: Path | None = None) -> list[VendorTime]:
    """``lookup`` for each of a run's cases, the cache read once."""
    if task.vendor is None:
        return [VendorTime(None, "no vendor library path for this problem")] * len(cases)
    if device_name == "cpu":
        return [VendorTime(None, "vendor times need a GPU")] * len(cases)
    measured = _read(path or cache_path()).get(device_name, {}).get(task.name, {})
    return [_entry_time(measured.get(shape_text(case))) for case in cases]


def _entry_time(entry: Any) -> VendorTime:
    if not isinstance(entry, dict):
        return VendorTime(None, MEASURE_HINT)
    median = entry.get("median_us")
    return VendorTime(float(median) if isinstance(median, (int, float)) else None, str(entry.get("note", "")))
