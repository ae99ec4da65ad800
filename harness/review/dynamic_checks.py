"""The dynamic checks of one entry: a fresh ranked run, the profiler's clock, sanitize mode, behind one seam.

Every run goes through the project's one execution path, as the leaderboard's own runs do:
``run_job`` (harness/execution/eval_job.py) writes the entry's bytes to a private folder and calls
the evaluator, which starts a fresh worker. The seam is the ``Runner`` (an EvalJob in, a RunResult
out): on a GPU it is run_job pinned to one GPU; the CPU tests pass a stand-in with canned results.
Where no GPU is visible, ``setup`` says in one line why the dynamic checks do not run.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.contract.results import RunResult
from harness.execution.eval_job import EvalJob, run_job
from harness.judge.verdict.modes import MODES, RANKED_MODE
from harness.review.clock_check import clock_flags
from harness.review.findings import Flag
from harness.review.physics_floor import physics_flags
from harness.review.reproduce import compare
from harness.review.sanitize_verdict import sanitize_flags

Runner = Callable[[EvalJob], RunResult]
CHECKS = ("rerun", "clock", "sanitize")
"""The dynamic checks, in the order they run; ``--skip`` names any of them."""

PROFILE_MODE = MODES["profile"].name
SANITIZE_MODE = MODES["sanitize"].name


class NoGpuError(Exception):
    """--device cuda where torch sees no GPU."""


@dataclass(frozen=True)
class DeviceSetup:
    """Where the dynamic checks run: a runner and the GPU's name, or one line on why they do not."""

    runner: Runner | None
    device_name: str
    why_not: str = ""
    gpu: str | None = None  # CUDA_VISIBLE_DEVICES for every run of the review


def rerun_gpu(count: int, requested: str | None = None) -> str | None:
    """The GPU of the fresh runs: as asked, else the last of several (the stored run's GPU is not
    recorded, and the serial leaderboard uses GPU 0), else the default one."""
    if requested is not None:
        return requested
    return str(count - 1) if count > 1 else None


def setup(device: str | None, gpu: str | None = None, progress: Callable[[str], None] | None = None) -> DeviceSetup:
    """The dynamic checks' device: ``device`` is 'cpu', 'cuda' or None (a GPU when one is visible)."""
    if device == "cpu":
        return DeviceSetup(None, "cpu", "dynamic checks (rerun, clock, sanitize): not run: --device cpu (a ranked "
                                        "rerun, Nsight Compute's clock and compute-sanitizer need a CUDA GPU)")
    import torch

    if not torch.cuda.is_available():
        if device == "cuda":
            raise NoGpuError("--device cuda, but no CUDA GPU is visible (use --device cpu for the static read "
                             "and the physics floor only)")
        return DeviceSetup(None, "cpu", "dynamic checks (rerun, clock, sanitize): not run: no CUDA GPU is visible "
                                        "here (run the review on a GPU machine of the board's model)")
    chosen = rerun_gpu(torch.cuda.device_count(), gpu)
    name = torch.cuda.get_device_name(int(chosen) if chosen else 0)

    def runner(job: EvalJob) -> RunResult:
        return run_job(job, chosen, progress)

    return DeviceSetup(runner, name, gpu=chosen)


@dataclass(frozen=True)
class Subject:
    """What the dynamic checks need of an entry: its bytes and its stored run."""

    problem: str
    filename: str
    source: bytes
    stored: RunResult
    stored_device: str
    rank: int | None
    other_scores: Sequence[float]  # every other ranked entry's score, for the fresh rank


def _job(subject: Subject, mode: str, secret: int | None = None) -> EvalJob:
    return EvalJob(key=f"review:{mode}:{subject.filename}", problem=subject.problem, filename=subject.filename,
                   source=subject.source, mode=mode, device="cuda", secret_seed=secret)


def run_checks(device: DeviceSetup, subject: Subject,
               skip: Sequence[str] = ()) -> tuple[list[Flag], list[str], dict[str, Any] | None]:
    """(flags, notes on checks not run, the fresh run's summary) of one entry."""
    if device.runner is None:
        return [], [device.why_not], None
    flags: list[Flag] = []
    notes = [f"{check}: skipped (--skip)" for check in CHECKS if check in skip]
    summary = None
    same_model = device.device_name == subject.stored_device
    if not same_model:
        notes.append(f"rerun and clock: not run: the stored run is from {subject.stored_device}, this machine's GPU "
                     f"is {device.device_name} (times compare only on one model)")
    if same_model and "rerun" not in skip:
        fresh = device.runner(_job(subject, RANKED_MODE.name, secrets.randbits(62)))  # a new secret, never shown
        found, said, summary = compare(subject.stored, subject.rank, fresh, subject.other_scores)
        summary["gpu"] = device.gpu
        physics, physics_notes = physics_flags(fresh, "fresh run") if not said and fresh.rankable else ([], [])
        flags += found + physics
        notes += said + physics_notes
    if same_model and "clock" not in skip:
        found, said = clock_flags(subject.stored, device.runner(_job(subject, PROFILE_MODE)))
        flags += found
        notes += said
    if "sanitize" not in skip:
        found, said = sanitize_flags(device.runner(_job(subject, SANITIZE_MODE)))
        flags += found
        notes += said
    return flags, notes, summary
