"""Canned RunResults and a fake evaluator: the leaderboard tested without a GPU or a worker."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import geometric_mean
from typing import Any

from harness import __version__
from harness.contract.results import CaseResult, RunResult, Status, TimingStats
from harness.leaderboard.store import Store, StoredRun

B200 = "NVIDIA B200"
GEMV_SHAPES = ({"m": 7168, "k": 16384, "l": 1, "seed": 1111}, {"m": 4096, "k": 7168, "l": 8, "seed": 1111},
               {"m": 7168, "k": 2048, "l": 4, "seed": 1111})
GEMV_SOL_US = (8.622, 17.275, 4.317)


def timing(median_us: float) -> TimingStats:
    return TimingStats(median_us=median_us, mean_us=median_us * 1.01, std_us=median_us * 0.02,
                       min_us=median_us * 0.97, max_us=median_us * 1.2, p10_us=median_us * 0.98,
                       p90_us=median_us * 1.05, runs=100, method="cuda-event+queued-sleep")


def make_run(medians: Sequence[float] | None = (20.0, 40.0, 10.0), *, problem: str = "nvfp4_gemv",
             path: str = "submissions/nvfp4_gemv/a.py", status: Status = Status.PASSED, reason: str = "",
             device: str = B200, device_type: str = "cuda", rankable: bool | None = None,
             version: str = __version__, shapes: Sequence[dict[str, Any]] = GEMV_SHAPES,
             sol_us: Sequence[float] | None = GEMV_SOL_US) -> RunResult:
    """A ranked-mode result: one test case, then one benchmark per shape (None: no benchmarks ran)."""
    cases = [CaseResult("test", {"m": 128, "k": 256, "l": 1, "seed": 1111}, Status.PASSED, "passed in 0.1 s")]
    for index, shape in enumerate(shapes if medians is not None else ()):
        median = medians[index]
        sol = sol_us[index] if sol_us else None
        cases.append(CaseResult("benchmark", dict(shape), Status.PASSED, "100 timed calls", timing=timing(median),
                                sol_us=sol, pct_of_sol=100 * sol / median if sol else None, warmup_s=0.5))
    if status != Status.PASSED:
        cases.append(CaseResult("test", {"m": 512, "k": 512, "l": 2, "seed": 1111}, status, reason))
    passed = status == Status.PASSED
    geomean = geometric_mean(medians) if medians is not None and passed else None
    pcts = [c.pct_of_sol for c in cases if c.pct_of_sol]
    pct_geomean = geometric_mean(pcts) if pcts and passed else None
    clocks = {"sm_clock_mhz": "1965", "max_sm_clock_mhz": "1965", "mem_clock_mhz": "3996"}
    return RunResult(
        problem=problem, submission_path=path, submission_sha256="", mode="leaderboard",
        device={"type": device_type, "name": device if device_type == "cuda" else "cpu",
                **(clocks if device_type == "cuda" else {})},
        harness_version=version, status=status, reason=reason, cases=cases, geomean_us=geomean,
        geomean_pct_of_sol=pct_geomean,
        rankable=(device_type == "cuda" and status == Status.PASSED) if rankable is None else rankable,
        started_at="2025-06-01T12:00:00+00:00", elapsed_s=12.0,
    )


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stored(run: RunResult, *, run_id: int, author: str, file: str, content: str | None = None,
           device_name: str | None = None, recorded_at: str | None = None) -> StoredRun:
    """A StoredRun without a database, for the pure ranking functions."""
    return StoredRun(id=run_id, problem=run.problem, submission_path=f"submissions/{run.problem}/{file}",
                     sha256=sha(content or file), author=author,
                     device_name=device_name or run.device.get("name", "cpu"),
                     recorded_at=recorded_at or f"2025-06-01T12:{run_id:02d}:00+00:00", harness_error=False,
                     result=run)


class FakeEvaluate:
    """Stands in for evaluate_submission: canned results by file name (an exception is raised, a
    function is called with the keyword arguments)."""

    def __init__(self, results: dict[str, RunResult | BaseException | Callable[..., RunResult]]) -> None:
        self.results = results
        self.calls: list[dict[str, Any]] = []

    def __call__(self, problem: str, submission: Path, **options: Any) -> RunResult:
        self.calls.append({"problem": problem, "submission": Path(submission), **options})
        options["progress"]("imported in 0.1 s; timing: fake")
        canned = self.results[Path(submission).name]
        if isinstance(canned, BaseException):
            raise canned
        return canned(**options) if callable(canned) else canned


SAMPLE_AUTHORS = {
    "cutlass_tcgen05.py": ("ada", (9.1, 18.0, 4.9)),
    "triton_splitk.py": ("grace", (10.4, 20.9, 5.6)),
    "cute_gemv.py": ("harness-baselines", (12.8, 24.1, 6.3)),
    "triton_gemv.py": ("harness-baselines", (15.9, 31.0, 7.7)),
    "cutlass_v1.py": ("ada", (11.2, 21.5, 5.9)),
    "warp_specialized.py": ("linus", (9.4, 17.6, 5.1)),
    "torch_reference.py": ("harness-baselines", (96.0, 210.0, 44.0)),
}


def fill_sample_store(store: Store, problem: str = "nvfp4_gemv") -> None:
    """A realistic board: several authors, a second file of one author, failures, a CPU run."""
    for index, (name, (author, medians)) in enumerate(SAMPLE_AUTHORS.items()):
        run = make_run(medians, problem=problem, path=f"submissions/{problem}/{name}")
        store.add(run, problem=problem, submission_path=f"submissions/{problem}/{name}", sha256=sha(name),
                  author=author, device_name=B200, recorded_at=f"2025-06-01T12:{index:02d}:00+00:00")
    failures = {
        "batch_and_skip.py": ("mallory", Status.FAILED, "benchmark m=4096 k=7168 l=8: call 7 output mismatch at "
                                                         "[12, 0, 3]: 41.5 vs expected 38.25 (rtol 1e-3, atol 1e-2)"),
        "hang.py": ("eve", Status.TIMEOUT, "a timed call ran past 600 s; the worker's process group was killed"),
        "timer_patch.py": ("trent", Status.REJECTED, "the submission replaced torch.cuda.Event.elapsed_time"),
    }
    for name, (author, status, reason) in failures.items():
        run = make_run(None, problem=problem, path=f"submissions/{problem}/{name}", status=status, reason=reason)
        store.add(run, problem=problem, submission_path=f"submissions/{problem}/{name}", sha256=sha(name),
                  author=author, device_name=B200, recorded_at="2025-06-01T13:00:00+00:00")
