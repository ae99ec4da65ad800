"""The one execution path: a submission's source in, a ``RunResult`` out.

The leaderboard, the Dask cluster and the submission service all evaluate through ``run_job``;
an executor (``harness.execution.serial_executor``, ``harness.execution.dask_executor``) decides
only *where* jobs run and hands finished results back to the one caller that writes the store.

A job carries the file's bytes, not a path: a Dask worker on another host has no access to the
organizer's checkout.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import socket
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import __version__
from harness.contract.results import RunResult, Status
from harness.judge.verdict.modes import RANKED_MODE

LineCallback = Callable[[str], None]
"""Where a job's progress goes: one line at a time (display.progress.as_progress makes a Progress of it)."""


@dataclass(frozen=True)
class EvalJob:
    """One evaluation to run somewhere."""

    key: str  # unique per job (a store id, a path): how results are matched to jobs
    problem: str
    filename: str  # the file's own name (kept: error messages and the report show it)
    source: bytes
    mode: str = RANKED_MODE.name  # a name of harness.judge.verdict.modes.MODES (the job crosses to Dask as data)
    device: str | None = None  # None: cuda when the executing host has a GPU, else cpu
    secret_seed: int | None = field(default=None, repr=False)  # never in a log line
    expected_s: float | None = None  # a stored duration of this file, for longest-first ordering
    worker: str | None = None  # a cluster worker's name it should run on (a GPU check's copies), None: any
    cache_owner: str | None = None  # whose compile caches it reuses (an author, a user), None: none kept


@dataclass
class HarnessFailure(RunResult):
    """A 'crashed' run the harness made because evaluating the job failed, not the submission.

    Its own type, so that whoever stores it marks it a harness error (never a cache hit: the
    next run retries the file) without parsing the reason.
    """


def is_harness_error(result: RunResult) -> bool:
    """Whether a result says nothing about the entry: the evaluator made none (HarnessFailure), or the
    harness could not measure consistently (Status.HARNESS_FAULT, e.g. its timing core could not start).
    Stored as the harness's record, never as the entry's result: the next run evaluates the entry again."""
    return isinstance(result, HarnessFailure) or result.status == Status.HARNESS_FAULT


def harness_failure(job: EvalJob, reason: str) -> HarnessFailure:
    """The record of a job that produced no RunResult (the evaluator raised, its worker died)."""
    return HarnessFailure(
        problem=job.problem,
        submission_path=job.filename,
        submission_sha256=hashlib.sha256(job.source).hexdigest(),
        mode=job.mode,
        device={"type": job.device or "unknown"},
        harness_version=__version__,
        status=Status.CRASHED,
        reason=f"{reason} (a harness error, not the submission's: the next run retries it)",
        started_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )


def exception_text(error: BaseException) -> str:
    """'RuntimeError: boom at evaluate.py:12': the exception and the line that raised it."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def gpu_identity(visible_devices: str | None) -> dict[str, str]:
    """Which card ran a GPU result: the host, the CUDA_VISIBLE_DEVICES the evaluator saw, the GPU's UUID.

    Why: a leaderboard over several GPUs holds each card's medians against its peers' (same file,
    same seed), and a ranked entry must say which card timed it.
    """
    import torch

    from harness.judge.verdict.evaluation import gpu_index

    identity = {"host": socket.gethostname(), "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    with contextlib.suppress(RuntimeError, AttributeError, AssertionError):  # no CUDA, or a torch without .uuid
        identity["uuid"] = str(torch.cuda.get_device_properties(gpu_index(visible_devices)).uuid)
    return identity


def run_job(job: EvalJob, visible_devices: str | None = None, progress: LineCallback | None = None) -> RunResult:
    """Evaluate one job in this process: its source goes to a private folder, then the evaluator.

    Never raises: an exception of the evaluator comes back as a ``HarnessFailure``, so one
    broken evaluation cannot lose the others of a run.
    """
    from harness.judge.run import evaluate_submission
    from harness.judge.verdict.modes import mode_named
    from harness.judge.verdict.run_options import RunOptions
    from harness.judge.worker_link import blank_workers

    blank_workers.keep_one_ahead()  # files come one after another here: the next one's worker starts early
    try:
        with tempfile.TemporaryDirectory(prefix="nvfp4-job-") as folder:
            path = Path(folder) / Path(job.filename).name
            path.write_bytes(job.source)
            # The worker drops to an unprivileged uid only where that uid can read the file (worker_process):
            # a 0700 folder kept every service, leaderboard and cluster job's worker at the evaluator's uid
            # (root on the GPU hosts). Searchable, not listable: the folder's random name stays private.
            os.chmod(folder, 0o711)
            path.chmod(0o644)
            options = RunOptions(secret_seed=job.secret_seed, visible_devices=visible_devices,
                                 cache_owner=job.cache_owner)
            result = evaluate_submission(job.problem, path, mode=mode_named(job.mode), device=job.device,
                                         options=options, progress=progress)
        if not isinstance(result, RunResult):
            raise TypeError(f"expected a RunResult, got {type(result).__name__}")
        # The private folder is gone and means nothing to the reader: name the file as submitted.
        result.submission_path = job.filename
        if result.device.get("type") == "cuda":
            result.device.update(gpu_identity(visible_devices))
        for record in (result, *result.cases):
            record.reason = record.reason.replace(str(path), job.filename)
    except Exception as error:  # any failure of one evaluation is recorded, never fatal to the run
        return harness_failure(job, f"the evaluator raised {exception_text(error)}")
    return result
