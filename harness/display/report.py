"""What a person reads: one line per case while it runs, and the final table."""

from __future__ import annotations

from harness.contract.messages import WORKER_STEPS
from harness.contract.results import NCU_CLOCK_NOTE, ROOF_NEAR_PCT, CaseResult, RunResult, Status
from harness.contract.task_spec import case_text, shape_text
from harness.display.tables import text_table

STATUS_WORDS = {
    Status.PASSED: "PASS",
    Status.FAILED: "FAIL",
    Status.REJECTED: "REJECTED",
    Status.CRASHED: "CRASHED",
    Status.CUDA_ERROR: "CUDA ERROR",
    Status.TIMEOUT: "TIMEOUT",
    Status.BAD_INPUT: "BAD INPUT",
    Status.UNSUPPORTED: "UNSUPPORTED",
    Status.NOT_RUN: "not run",
    Status.HARNESS_FAULT: "HARNESS FAULT",
}


def case_summary(case: CaseResult) -> str:
    if case.status == Status.PASSED and case.timing:
        sol = f", {case.pct_of_sol:.1f}% of SOL" if case.pct_of_sol else ""
        return f"{case.timing.median_us:.2f} us median over {case.timing.runs} calls{sol}"
    return f"{STATUS_WORDS[case.status]}: {case.reason}" if case.reason else STATUS_WORDS[case.status]


def _test_lines(tests: list[CaseResult]) -> list[str]:
    """One row per test shape and seed; a run of shapes not run for one reason is one row."""
    rows: list[list[str]] = []
    index = 0
    while index < len(tests):
        case = tests[index]
        end = index + 1
        while case.status == Status.NOT_RUN and end < len(tests) and tests[end].status == Status.NOT_RUN \
                and tests[end].reason == case.reason:
            end += 1
        shape = case_text(case.case) if end == index + 1 else f"{end - index} shapes"
        rows.append([STATUS_WORDS[case.status], shape, case.reason])
        index = end
    return text_table(["status", "shape", "why"], rows, indent=2, right=())


def _kernel_lines(case: CaseResult) -> list[str]:
    """Nsight Compute's kernels of one profiled call: what each took and what bounds it."""
    if not case.kernels:
        return []
    rows = [[k.name, f"{k.duration_us:.2f}", f"{k.dram_pct:.1f}", f"{k.sm_pct:.1f}", f"{k.occupancy_pct:.1f}",
             str(k.registers), k.bound] for k in case.kernels]
    columns = ["kernel", "us", "DRAM %", "SM %", "occupancy %", "regs/thread", "bound by"]
    return ["", f"Nsight Compute, one call of {shape_text(case.case)} (% of peak; bound by the larger once it "
            f"reaches {ROOF_NEAR_PCT:.0f}%, else by latency):", *text_table(columns, rows, indent=2),
            f"  {NCU_CLOCK_NOTE}"]


def _traceback_lines(result: RunResult, verbose: bool) -> list[str]:
    """The worker's tracebacks (or stacks at a timeout) of the failed cases; without ``verbose`` a
    hint that they exist."""
    kept = [c for c in result.cases if c.traceback]
    if not kept:
        return []
    if not verbose:
        return ["", "(--verbose prints the worker's traceback, or its stacks at a timeout; --json keeps it)"]
    lines: list[str] = []
    for case in kept:
        what = "Python stacks at the time limit" if case.status == Status.TIMEOUT else "Traceback"
        lines += ["", f"{what} of {case.kind} {shape_text(case.case)} (in the worker):"]
        lines += ["  " + line for line in case.traceback.rstrip().splitlines()]
    return lines


def _vendor_lines(timed: list[CaseResult]) -> list[str]:
    """What the % vendor column compares with (100 = the vendor's time; above beats it), or why it is empty."""
    notes = sorted({c.vendor_note for c in timed if c.vendor_note})
    if any(c.pct_of_vendor for c in timed):
        return [f"% vendor: the vendor library's median on this GPU over yours ({'; '.join(notes)})"]
    return [f"% vendor: none ({note})" for note in notes]


PHASE_WORDS = {"start": "start and imports", "setup": "setup", "worker_start": "worker start", "tests": "tests",
               "warmup": "warm-up", "timed": "timed calls", "recheck": "rechecks", "profile": "profiles",
               "close": "worker stop", "vendor": "the vendor's first measurement", "other": "other"}
CALL_WORDS = {"inputs_wait": "inputs wait", "exchange": "exchange", "seal": "MAC", "draw": "draw", "check": "check",
              "collector": "of these the garbage collector"}


def _wall_lines(result: RunResult) -> list[str]:
    """Where the run's wall time went (harness.judge.verdict.wall_clock), and the harness's time per timed call."""
    if not result.wall_s:
        return []
    total = sum(s for name, s in result.wall_s.items() if name in PHASE_WORDS)
    parts = []
    for name, words in PHASE_WORDS.items():
        seconds = result.wall_s.get(name)
        if seconds is None or (seconds < 0.05 and name not in ("timed", "tests")):
            continue
        own = result.wall_s.get("submission_import") if name == "worker_start" else None
        ahead = result.wall_s.get("worker_head_start", 0.0) if name == "worker_start" else 0.0
        steps = [f"{step} {result.wall_s[f'worker_{step}']:.1f}" for step in WORKER_STEPS
                 if name == "worker_start" and result.wall_s.get(f"worker_{step}", 0.0) >= 0.05]
        notes = ([f"its import {own:.1f}"] if own is not None else []) + steps + (
            [f"after {ahead:.1f} started ahead, not counted"] if ahead >= 0.05 else [])
        parts.append(f"{words} {seconds:.1f}" + (f" ({'; '.join(notes)})" if notes else ""))
    notifications = result.wall_s.get("supervisor_notifications")
    if notifications:
        parts.append(f"syscall supervisor {result.wall_s.get('supervisor', 0.0):.2f} over {notifications:.0f} "
                     "notifications")
    lines = ["", f"Wall time {total:.1f} s: " + ", ".join(parts)]
    for case in (c for c in result.cases if c.kind == "benchmark" and c.overhead_split_ms):
        split = ", ".join(f"{CALL_WORDS.get(k, k)} {v:.2f}" for k, v in case.overhead_split_ms.items())
        said = ", ".join(f"{k} {v:.2f}" for k, v in (case.worker_split_ms or {}).items())
        lines.append(f"  ms per timed call, {shape_text(case.case)}: {split}" + (f" (worker's account: {said})"
                                                                                  if said else ""))
    return lines


def render(result: RunResult, verbose: bool = False) -> str:
    """The report: the verdict, the tables, the geomean and the notes that matter. ``verbose`` adds an
    organizer's diagnostics: the harness's time per call, where the wall time went, and the worker's
    traceback of each failed case."""
    device = result.device.get("name", result.device.get("type", "?"))
    lines = [f"{result.problem}: {result.submission_path} "
             f"({result.mode} mode, {device}, harness {result.harness_version})"]
    tests = [c for c in result.cases if c.kind == "test"]
    timed = [c for c in result.cases if c.kind == "benchmark"]
    on_cpu = result.device.get("type") == "cpu"
    if tests:
        passed = f"{sum(c.status == Status.PASSED for c in tests)}/{len(tests)}"
        lines += ["", f"Correctness on the CPU: {passed} shapes passed ({_cpu_scope(result.scope, bool(timed))})"
                  if on_cpu and result.scope else f"Correctness: {passed} test shapes passed"]
        lines += _test_lines(tests)
    if timed:
        columns = ["shape", "median us", "p10-p90 us", "runs", "SOL us", "% SOL", "% vendor", "compile+1st s",
                   *(["harness ms/call"] if verbose else []), "status"]
        rows = [columns]
        for case in timed:
            t = case.timing
            rows.append([
                shape_text(case.case),
                (f"{t.median_us:.2f}" + (f" +-{case.error_bound_us:.2f}" if case.error_bound_us is not None else ""))
                if t else "-",
                f"{t.p10_us:.2f}-{t.p90_us:.2f}" if t else "-",
                str(t.runs) if t else "-",
                f"{case.sol_us:.2f}" if case.sol_us else "-",
                f"{case.pct_of_sol:.1f}" if case.pct_of_sol else "-",
                f"{case.pct_of_vendor:.1f}" if case.pct_of_vendor else "-",
                f"{case.warmup_s:.2f}" if case.warmup_s is not None else "-",
                *([f"{case.overhead_ms:.1f}" if case.overhead_ms is not None else "-"] if verbose else []),
                STATUS_WORDS[case.status],
            ])
        lines += ["", "Timing" + (f" ({timed[0].timing.method})" if timed[0].timing else ""),
                  *text_table(rows[0], rows[1:])]
        for case in timed:
            if case.status != Status.PASSED:
                lines.append(f"  {shape_text(case.case)}: {case.reason}")
        lines += _vendor_lines(timed)
        if result.error_bound_note:
            what = "the harness's error against graph replay" if any(c.error_bound_us is not None for c in timed) \
                else "none"
            lines.append(f"+-: {what} ({result.error_bound_note})")
        if result.geomean_us:
            pct = f", {result.geomean_pct_of_sol:.1f}% of SOL" if result.geomean_pct_of_sol else ""
            pct += f", {result.geomean_pct_of_vendor:.1f}% of vendor" if result.geomean_pct_of_vendor else ""
            lines.append(f"Geometric mean: {result.geomean_us:.2f} us{pct}")
        if not result.rankable:
            why = "CPU wall-clock times" if result.device.get("type") == "cpu" else (
                "only leaderboard mode with the organizer's secret seed is ranked" if result.status == Status.PASSED
                else "some case did not pass")
            lines.append(f"Not rankable: {why}")
    for case in timed:
        lines += _kernel_lines(case)
        if case.profile:
            lines += ["", f"Profile of one call, {shape_text(case.case)} (torch.profiler):", case.profile]
    if result.ncu_reports:
        lines += ["", f"Nsight Compute reports (.ncu-rep, open in ncu-ui): {result.ncu_reports}"]
    if result.stdout_tail.strip():
        lines += ["", "Submission output (last lines, shown as printed, never parsed):"]
        lines += ["  | " + line for line in result.stdout_tail.strip().splitlines()[-15:]]
    lines += _traceback_lines(result, verbose)
    if result.status == Status.PASSED and result.reason and not (on_cpu and result.scope):  # else the headline
        lines += ["", f"Note: {result.reason}"]
    if result.sanitizer_report:
        lines += ["", f"Full compute-sanitizer report: {result.sanitizer_report}"]
    if verbose:
        lines += _wall_lines(result)
    verdict = STATUS_WORDS[result.status] if result.status != Status.NOT_RUN else "nothing run"
    if result.status != Status.PASSED:
        why = f": {result.reason}" if result.reason else ""
    else:
        why = f" on the CPU: {_cpu_scope(result.scope, bool(timed), short=True)}" if on_cpu and result.scope else ""
    lines += ["", f"Result: {verdict} (exit code {int(result.exit_code)}){why}"]
    return "\n".join(lines)


def _cpu_scope(scope: dict[str, int], timed: bool, short: bool = False) -> str:
    """How much of the contest a CPU run checked: '1 of the contest's 10 test shapes + 1 smaller
    shape of its own, 2 calls each (new inputs in the same tensors); timing not run: it needs a GPU'."""
    checked = f"{scope['contest_tests_run']} of the contest's {scope['contest_tests']} test shapes"
    timing = "timed by wall clock, not ranked" if timed else "no timing: it needs a GPU"
    if short:
        return f"{checked} checked; {timing}"
    own = scope.get("own_tests_run", 0)
    if own:
        checked += f" + {own} smaller shape{'s' * (own != 1)} of its own"
    calls = scope.get("calls_per_test", 1)
    if calls > 1:
        checked += f", {calls} calls each (new inputs in the same tensors)"
    return f"{checked}; {timing}"
