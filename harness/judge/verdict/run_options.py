"""How one evaluation runs beyond its file, mode and device: one frozen record, the CLI's defaults."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.contract.task_spec import Task


@dataclass(frozen=True)
class RunOptions:
    """Everything ``evaluate_submission`` may be told besides what to judge and where.

    ``timeout_scale`` multiplies every stage limit of task.yml (organizers with slow JIT toolchains
    raise it; tests lower it). ``keep_going`` runs every case even after the first ones failed the
    same way. Sanitize mode runs ``sanitizer_tool`` (or ``all``) and writes every raw report to
    ``sanitizer_report`` (default: a new file in the temp folder). Profile mode on a GPU with Nsight
    Compute keeps its .ncu-rep files in ``ncu_report_dir`` (default: a new temp folder).
    ``vendor_first_use`` (the contestant's `eval`: harness.commands.calibrate_command.measure_vendor):
    on a GPU whose vendor time is not cached yet, called once to measure it, so the "% vendor" column
    is filled; passed in, since the measurement is itself an evaluation. ``cache_owner``: whose
    compile caches (Triton, inductor, load_inline) the workers keep between runs: the file's path
    for a contestant's `eval`, the author or user on a leaderboard or the service; None: none kept
    (harness.judge.worker_link.compile_cache).
    """

    secret_seed: int | None = field(default=None, repr=False)  # ranked mode's secret; never in a log line
    visible_devices: str | None = None  # the one GPU a worker is given (CUDA_VISIBLE_DEVICES), None: all
    timeout_scale: float = 1.0
    keep_going: bool = False
    sanitizer_tool: str = "memcheck"
    sanitizer_report: Path | None = None
    ncu_report_dir: Path | None = None
    vendor_first_use: Callable[[Task, str], object] | None = None
    cache_owner: str | None = None


DEFAULT_OPTIONS = RunOptions()
