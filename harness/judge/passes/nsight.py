"""Profile mode's Nsight Compute pass: each benchmark shape's call profiled once under ``ncu``.

One fresh worker per shape runs wrapped by ``ncu --profile-from-start off``: it imports the
submission, makes one warm call (compile, autotune) outside any profiled range, then one call
between cudaProfilerStart and cudaProfilerStop, so only that call's kernels are profiled. ncu
writes one .ncu-rep per shape (kept: open it in ncu-ui); the parent reads it back with
``ncu --import --csv --page raw`` and keeps, per kernel: duration, DRAM and SM throughput (% of
peak), achieved occupancy, registers per thread, and what bounds it (``bound_by``).

Clocks: ncu locks the GPU's clocks to their base values by default (``--clock-control base``), so
its kernel times were those of a slower GPU than the timed run's (H100: 173 us under ncu for the
Triton GEMM's first shape, 144 us timed; issue 34). ``--clock-control none`` leaves the GPU's own
clock management on, as it is during the timed calls: the two then run at the same clocks, and the
report says so (harness.contract.results.NCU_CLOCK_NOTE), with what still differs: ncu times one
call, each kernel replayed once per metric pass, without the timed loop's L2 flush and queued sleep.

The worker keeps the evaluator's uid: the driver lets only admin users read the performance
counters by default (NVreg_RestrictProfilingToAdminUsers). Profile mode is never ranked and the
service does not take it.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from harness.contract.results import ROOF_NEAR_PCT, CaseResult, KernelProfile, Status
from harness.contract.task_spec import shape_text
from harness.judge.worker_link.worker_channel import WorkerFailure

if TYPE_CHECKING:
    from harness.judge.verdict.evaluation import Evaluation

CUDA_BIN = Path("/usr/local/cuda/bin")
METRICS = {
    "gpu__time_duration.sum": "duration_us",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "launch__registers_per_thread": "registers",
}
"""The metrics collected, and the KernelProfile field each fills."""
TIMEOUT_SCALE = 10.0
"""Stage limits are multiplied by this under ncu: it replays each kernel once per metric pass and
serializes every launch, the first call's compile included."""
IMPORT_TIMEOUT_S = 120.0
US_PER_UNIT = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
               "second": 1e6, "s": 1e6}
NAME_CHARS = 60


class NsightFailed(Exception):
    """ncu ran but left no usable report; the message says why in one line."""


def find_ncu(path: str | None = None) -> Path | None:
    """ncu on PATH, else in the CUDA toolkit's bin folder; None when neither has it."""
    found = shutil.which("ncu", path=path)
    if found:
        return Path(found)
    return CUDA_BIN / "ncu" if os.access(CUDA_BIN / "ncu", os.X_OK) else None


CLOCKS_AND_CACHES = ("--cache-control", "all", "--clock-control", "none")
"""The clocks the harness's timed calls run at (ncu's default locks them to base) and every cache
flushed before each kernel, as the harness flushes L2 before each call: the setting docs/timing.md's
three-clock table was measured with, so `harness review` can hold these times against the harness's."""


def profile_prefix(ncu: Path, report: Path) -> list[str]:
    """The command that wraps the worker: only the cudaProfilerStart/Stop range, our metrics."""
    return [str(ncu), "--target-processes", "all", "--profile-from-start", "off", "--metrics", ",".join(METRICS),
            "--export", str(report), "--force-overwrite", *CLOCKS_AND_CACHES]


def import_command(ncu: Path, report: Path) -> list[str]:
    """The command that prints a saved report as CSV: one row per kernel, metrics in base units."""
    return [str(ncu), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", ",".join(METRICS)]


def _number(text: str) -> float:
    """A CSV cell as ncu prints it ('41,792', '83.64', 'n/a') as a number (0 when not one)."""
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return 0.0


def kernel_name(name: str) -> str:
    """A readable kernel name: the demangled signature without its argument list, shortened."""
    short = re.sub(r"\(.*\)\s*$", "", name.strip())
    return short if len(short) <= NAME_CHARS else short[:NAME_CHARS - 3] + "..."


def parse_raw_csv(text: str) -> list[KernelProfile]:
    """Kernels from `ncu --csv --page raw`: a header row, a units row, then one row per launch."""
    lines = text[text.find('"ID"'):] if '"ID"' in text else ""
    rows = list(csv.reader(io.StringIO(lines)))
    if len(rows) < 2 or any(metric not in rows[0] for metric in METRICS):
        raise NsightFailed("ncu's CSV lacks the metrics asked for: " + (lines.splitlines() or [text.strip()])[0][:200])
    header, units = rows[0], dict(zip(rows[0], rows[1]))
    kernels = []
    for row in rows[2:]:
        if len(row) != len(header):
            continue
        cells = dict(zip(header, row))
        values = {field: _number(cells[metric]) for metric, field in METRICS.items()}
        values["duration_us"] *= US_PER_UNIT.get(units.get("gpu__time_duration.sum", "nsecond"), 1e-3)
        bound = bound_by(values["dram_pct"], values["sm_pct"], values["occupancy_pct"])
        kernels.append(KernelProfile(
            name=kernel_name(cells.get("Kernel Name", "?")), duration_us=values["duration_us"],
            dram_pct=values["dram_pct"], sm_pct=values["sm_pct"], occupancy_pct=values["occupancy_pct"],
            registers=int(values["registers"]), bound=bound))
    return kernels


def bound_by(dram_pct: float, sm_pct: float, occupancy_pct: float) -> str:
    """'memory' or 'compute', whichever throughput is higher, once one reaches ROOF_NEAR_PCT; else
    'latency (12% occupancy)': neither roof is near."""
    if max(dram_pct, sm_pct) < ROOF_NEAR_PCT:
        return f"latency ({occupancy_pct:.0f}% occupancy)"
    return "memory" if dram_pct >= sm_pct else "compute"


def profile_case(evaluation: Evaluation, case: dict[str, object], ncu: Path, report: Path) -> list[KernelProfile]:
    """One shape's call under ncu in a fresh worker, its report read back; NsightFailed saying why not."""
    limits = evaluation.task.timeouts_s
    seeded = {**case, "seed": evaluation.checker.call_seed(case, 0)}
    try:
        with evaluation.session(profile_prefix(ncu, report), TIMEOUT_SCALE, keep_uid=True, unsealed=True) as session:
            session.start()
            session.profile(seeded, TIMEOUT_SCALE * (limits["warmup"] + limits["call"]), under_ncu=True)
    except WorkerFailure as failure:
        raise NsightFailed(f"the worker under ncu failed: {failure.reason}") from None
    if not report.is_file():
        said = (evaluation.stdout_tail.strip().splitlines() or ["no output"])[-1]
        raise NsightFailed(f"ncu wrote no report; its last line: {said}")
    try:
        done = subprocess.run(import_command(ncu, report), capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NsightFailed(f"ncu --import failed: {error}") from None
    kernels = parse_raw_csv(done.stdout)
    if not kernels:
        raise NsightFailed("ncu profiled no kernel in the call (did it run on the GPU?)")
    return kernels


def profile_cases(evaluation: Evaluation, results: list[CaseResult], ncu: Path, folder: Path) -> list[str]:
    """Every passed benchmark shape under ncu, its kernels added to its result; notes on failures."""
    folder.mkdir(parents=True, exist_ok=True)
    timed = [c for c in results if c.kind == "benchmark" and c.status == Status.PASSED]
    notes = []
    for position, case in enumerate(timed, 1):
        name = re.sub(r"[^A-Za-z0-9=,_-]+", "_", shape_text(case.case))
        try:
            case.kernels = profile_case(evaluation, case.case, ncu, folder / f"{position:02d}_{name}.ncu-rep")
            summary = f"{len(case.kernels)} kernel(s), {sum(k.duration_us for k in case.kernels):.2f} us"
        except NsightFailed as error:
            summary = f"Nsight Compute: {error}"
            notes.append(f"{shape_text(case.case)}: {summary}")
        evaluation.progress.step(f"[ncu {position}/{len(timed)}] {shape_text(case.case)}: {summary}")
    return notes


def unavailable(device: str, ncu: Path | None) -> str | None:
    """Why the Nsight Compute pass cannot run here, in one line; None when it can."""
    if device != "cuda":
        return "Nsight Compute profiles CUDA kernels: on the CPU only torch.profiler's table is shown"
    if ncu is None:
        return (f"Nsight Compute (ncu) is not on PATH or in {CUDA_BIN}: torch.profiler's table only; install the "
                "CUDA toolkit's Nsight Compute for per-kernel DRAM %, SM %, occupancy and registers")
    return None
