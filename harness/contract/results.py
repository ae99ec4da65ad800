"""Typed records of one evaluation: statuses, exit codes, per-case results, the run.

These are the contract between the evaluator, the report, the JSON file and the leaderboard
store. ``RunResult.to_json()`` is the documented result format (docs/architecture.md).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field, fields
from typing import Any


class ExitCode(enum.IntEnum):
    """Process exit codes, compatible with the contest's runners."""

    PASSED = 0  # every check passed (and every benchmark was timed)
    CRASHED = 1  # the submission raised, exited or was killed (the reason names the signal)
    CUDA_FAILURE = 110  # a CUDA/device fault (illegal address, OOM) or no usable GPU
    CHECK_FAILED = 112  # an output was wrong, or the submission broke a rule of the harness
    BAD_INPUT = 113  # a malformed task.yml, case, submission file or command line
    TIMEOUT = 114  # a stage ran past its limit; the worker's process group was killed
    UNSUPPORTED = 115  # this machine lacks what the submission needs (a Blackwell GPU, any GPU, CuTe DSL)
    HARNESS_FAULT = 116  # the harness's own measurement was inconsistent twice; nothing is blamed on the submission


class Status(str, enum.Enum):
    """Verdict of one case, and of a run (its worst case)."""

    PASSED = "passed"
    FAILED = "failed"  # wrong output (values, shape, dtype, list length, unfinished work)
    REJECTED = "rejected"  # broke a harness rule: tampering, returned an input, implausible time
    CRASHED = "crashed"
    CUDA_ERROR = "cuda_error"
    TIMEOUT = "timeout"
    BAD_INPUT = "bad_input"
    UNSUPPORTED = "unsupported"  # needs hardware or software this machine lacks; the reason says what
    NOT_RUN = "not_run"  # left out on purpose (say why in the reason), e.g. too large for the CPU
    HARNESS_FAULT = "harness_fault"  # the harness could not measure consistently; not the submission's fault

    @property
    def exit_code(self) -> ExitCode:
        return _EXIT_CODES[self]


_EXIT_CODES = {
    Status.PASSED: ExitCode.PASSED,
    Status.NOT_RUN: ExitCode.PASSED,
    Status.FAILED: ExitCode.CHECK_FAILED,
    Status.REJECTED: ExitCode.CHECK_FAILED,
    Status.CRASHED: ExitCode.CRASHED,
    Status.CUDA_ERROR: ExitCode.CUDA_FAILURE,
    Status.TIMEOUT: ExitCode.TIMEOUT,
    Status.HARNESS_FAULT: ExitCode.HARNESS_FAULT,
    Status.BAD_INPUT: ExitCode.BAD_INPUT,
    Status.UNSUPPORTED: ExitCode.UNSUPPORTED,
}

# Which status wins when a run has several: the most severe, so one bad case fails the run.
SEVERITY = (
    Status.NOT_RUN,
    Status.PASSED,
    Status.UNSUPPORTED,
    Status.FAILED,
    Status.REJECTED,
    Status.CRASHED,
    Status.CUDA_ERROR,
    Status.TIMEOUT,
    Status.BAD_INPUT,
    Status.HARNESS_FAULT,
)


def worst(statuses: list[Status]) -> Status:
    return max(statuses, key=SEVERITY.index, default=Status.NOT_RUN)


@dataclass
class TimingStats:
    """Robust statistics of one case's timed calls, in microseconds."""

    median_us: float
    mean_us: float
    std_us: float
    min_us: float
    max_us: float
    p10_us: float
    p90_us: float
    runs: int
    method: str  # how each call was timed, e.g. "cuda-event+queued-sleep" or "wall-clock (cpu)"


@dataclass
class KernelProfile:
    """One kernel launch of a profiled call as Nsight Compute measured it (profile mode on a GPU)."""

    name: str
    duration_us: float
    dram_pct: float  # DRAM throughput, % of its sustained peak over the kernel's time
    sm_pct: float  # SM throughput, % of its sustained peak
    occupancy_pct: float  # achieved occupancy: active warps, % of the SM's maximum
    registers: int  # per thread
    bound: str  # "memory" or "compute" (the larger throughput, once one is near its roof: 60% of peak),
    # else "latency (N% occupancy)" (harness.judge.passes.nsight.bound_by)


ROOF_NEAR_PCT = 60.0
"""A kernel is bound by memory or compute only when that throughput reaches this % of its peak; below
it on both, neither roof is near: it waits on latency, and its achieved occupancy says how well it
hides it (a 12%-occupancy kernel at 23% SM and 16% DRAM is no more compute-bound than memory-bound)."""
NCU_CLOCK_NOTE = ("clocks: the GPU's own, as in the timed calls (ncu --clock-control none); every cache flushed "
                  "before each kernel (--cache-control all); one call, each kernel replayed per metric pass: its "
                  "times differ from the timed median by that")
"""What the report says under Nsight Compute's table (harness.judge.passes.nsight: CLOCKS_AND_CACHES)."""


@dataclass
class CaseResult:
    kind: str  # "test" or "benchmark"
    case: dict[str, Any]
    status: Status
    reason: str = ""
    timing: TimingStats | None = None
    sol_us: float | None = None
    pct_of_sol: float | None = None
    warmup_s: float | None = None  # first call(s), including any JIT compile
    profile: str | None = None  # torch.profiler table of one call (profile mode)
    overhead_ms: float | None = None  # harness wall time per timed call made (exposed ones included, as in
    # overhead_split_ms) beyond the median call's own time
    overhead_split_ms: dict[str, float] | None = None  # per timed call, the parent's clock: the wait for the
    # worker's prefetched inputs, the exchange (request to reply), the MAC check, the parent's draw and check
    worker_split_ms: dict[str, float] | None = None  # per timed call, as the worker reports it (never trusted,
    # shown only): its draw, the scan of the inputs, the compiled core's call, the checks after it
    queued_sleep_us: float | None = None  # the sleep queued ahead of each timed call, at the end
    exposed_calls: int = 0  # timed calls whose host launch outran the sleep (the first EXPOSED_RETRIES
    # discarded with the sleep raised; later ones counted at the first sleep)
    event_overhead_us: float | None = None  # what the kept times subtracted: the event overhead measured for
    # this case, before its timed calls (sealed runs; None without the compiled core)
    second_clock_us: float | None = None  # the median of the kept calls' windows on the GPU's own clock (the core's
    # %globaltimer stamps, nothing subtracted): beside the events' raw time, it says which clock moved (issue 38)
    error_bound_us: float | None = None  # the harness's residual error against graph replay at this median,
    # on this GPU (calibrate's fidelity record); None when the GPU was never calibrated
    vendor_us: float | None = None  # the vendor library's median on this shape and GPU (calibrate --vendor)
    pct_of_vendor: float | None = None  # 100 * vendor_us / median: above 100 beats the vendor
    vendor_note: str | None = None  # the library's name, or why there is no vendor time
    traceback: str | None = None  # the worker's traceback when the submission raised, or its Python stacks
    # (all threads) when a stage timed out; shown by `eval --verbose`
    kernels: list[KernelProfile] | None = None  # profile mode with Nsight Compute: one call's kernels


@dataclass
class RunResult:
    problem: str
    submission_path: str
    submission_sha256: str
    mode: str
    device: dict[str, Any]
    harness_version: str
    status: Status = Status.NOT_RUN
    reason: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    geomean_us: float | None = None
    geomean_pct_of_sol: float | None = None
    geomean_pct_of_vendor: float | None = None
    rankable: bool = False  # timed on a GPU, in full, with every output checked
    author: str | None = None
    stdout_tail: str = ""
    started_at: str = ""
    elapsed_s: float = 0.0
    wall_s: dict[str, float] = field(default_factory=dict)  # where the wall time went, by phase
    # (harness.judge.verdict.wall_clock.PHASES; 'start' is the process's own start, before elapsed_s began)
    sanitizer_report: str | None = None  # sanitize mode: the file holding every raw compute-sanitizer report
    ncu_reports: str | None = None  # profile mode with Nsight Compute: the folder of its .ncu-rep files
    error_bound_note: str | None = None  # where each median's error bound comes from (calibrate's fidelity
    # record of this GPU), or why there is none; None off the GPU
    scope: dict[str, int] | None = None  # how much of the contest the run covered: contest_tests,
    # contest_tests_run, own_tests_run (the CPU's smaller shapes), calls_per_test, contest_benchmarks,
    # benchmarks_timed (contest benchmark shapes timed)

    @property
    def exit_code(self) -> ExitCode:
        return self.status.exit_code

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["exit_code"] = int(self.exit_code)
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> RunResult:
        """The record ``to_json`` wrote, by this harness version or another one: a stored result
        outlives the harness, so a field this version does not know is left out, never an error."""
        cases = [
            CaseResult(
                **{
                    **_known(case, CaseResult),
                    "status": Status(case["status"]),
                    "timing": TimingStats(**_known(case["timing"], TimingStats)) if case.get("timing") else None,
                    "kernels": [KernelProfile(**_known(k, KernelProfile)) for k in case["kernels"]]
                    if case.get("kernels") else None,
                }
            )
            for case in record.get("cases", [])
        ]
        return cls(**{**_known(record, cls), "status": Status(record["status"]), "cases": cases})


def _known(record: dict[str, Any], kind: type) -> dict[str, Any]:
    """The keys of ``record`` that ``kind`` has: a field another harness version wrote is left out."""
    names = {f.name for f in fields(kind)}
    return {key: value for key, value in record.items() if key in names}
