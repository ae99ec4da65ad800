"""Each GPU's medians held against its peers': one file, with the same seed, timed on every GPU.

Why: a leaderboard spread over several GPUs ranks files timed on different cards. If one card
reads slower or faster than the others (clocks, power, a neighbour's heat), a file's rank depends
on where it landed. A leaderboard run over several GPUs therefore times one check file on every
GPU (runner.py places the copies), and a GPU whose medians read more than
``AGREEMENT_TOLERANCE_PCT`` off its peers' is flagged on the pages. With two GPUs neither can be
blamed alone: both are flagged. Pure functions over results; no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.contract.results import RunResult, Status

AGREEMENT_TOLERANCE_PCT = 2.0
"""A GPU whose geometric mean of median ratios to its peers is further off than this is flagged.
The score is a geometric mean of medians, so that is what a card's bias moves; a single shape
of a single run can stray more (docs/results.md: identical copies of one file on one H200
differed by up to 2.25% on a 14 us shape)."""


@dataclass(frozen=True)
class GpuReading:
    """One GPU's check: how its medians compare with the other GPUs' on the same file."""

    gpu: str  # the GPU's identity (its UUID where known)
    label: str  # what the pages show: worker, model, UUID head
    check: str  # the check file: problem and short sha256
    ratio: float | None  # geometric mean over shapes of its median / the peers' median; None: no peer
    worst_shape_pct: float | None  # the largest single-shape deviation from the peers, in percent
    flagged: bool

    @property
    def off_pct(self) -> float | None:
        return None if self.ratio is None else 100 * (self.ratio - 1)


def gpu_id(device: dict[str, Any]) -> str:
    """A GPU's identity from a result's device record: its UUID, else host, visible device and worker."""
    if device.get("uuid"):
        return str(device["uuid"])
    parts = [str(device.get(key, "")) for key in ("host", "visible_devices", "worker")]
    return "/".join(parts) if any(parts) else str(device.get("name", "?"))


def gpu_label(device: dict[str, Any]) -> str:
    uuid = str(device.get("uuid", ""))
    parts = [str(device[key]) for key in ("worker", "host", "name") if device.get(key)]
    return " · ".join(parts + ([uuid.removeprefix("GPU-")[:8]] if uuid else [])) or gpu_id(device)


def shape_medians(result: RunResult) -> dict[str, float]:
    """Median per benchmark shape (seed included: the same inputs) of the shapes that passed."""
    return {repr(sorted(case.case.items())): case.timing.median_us for case in result.cases
            if case.kind == "benchmark" and case.status == Status.PASSED and case.timing
            and case.timing.median_us > 0}


def _check_label(result: RunResult) -> str:
    return f"{result.problem}/{result.submission_path.rsplit('/', 1)[-1]}"


def assess(samples: Sequence[RunResult], tolerance_pct: float = AGREEMENT_TOLERANCE_PCT) -> list[GpuReading]:
    """One reading per GPU that timed the check file (the first sample of a GPU counts)."""
    by_gpu: dict[str, RunResult] = {}
    for result in samples:
        if shape_medians(result):
            by_gpu.setdefault(gpu_id(result.device), result)
    readings = []
    for gpu, result in sorted(by_gpu.items()):
        own = shape_medians(result)
        ratios = []
        for shape, median in own.items():
            peers = [shape_medians(other).get(shape) for key, other in by_gpu.items() if key != gpu]
            peers = [value for value in peers if value]
            if peers:
                ratios.append(median / statistics.median(peers))
        ratio = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else None
        worst = 100 * max(abs(r - 1) for r in ratios) if ratios else None
        flagged = ratio is not None and 100 * abs(ratio - 1) > tolerance_pct
        readings.append(GpuReading(gpu, gpu_label(result.device), _check_label(result), ratio, worst, flagged))
    return readings
