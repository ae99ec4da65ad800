"""Find every submission file, evaluate each in ranked mode (or reuse a stored run), store it.

Why it is careful: one organizer run covers every contestant, so nothing one file does may stop
it. The evaluator isolates the submission itself, and ``run_job`` turns any exception of the
evaluator into a "crashed" HarnessFailure. Where the jobs run is the executor's business (in this
process one after another, or on a Dask cluster, harness.execution); this
module only submits them, longest first, and is the one writer of the store.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import statistics
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness import __version__
from harness.contract.results import RunResult, Status
from harness.display.progress import Progress, as_progress
from harness.execution.eval_job import EvalJob, is_harness_error
from harness.execution.serial_executor import Executor, SerialExecutor
from harness.judge.verdict.modes import RANKED_MODE
from harness.leaderboard import ledger
from harness.leaderboard.rank import why_not_rankable
from harness.leaderboard.store import Store

AUTHOR_LINE = re.compile(r"^#!POPCORN\s+author\s+(.+?)\s*$", re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True)
class Submission:
    problem: str
    path: Path  # absolute
    stored_path: str  # relative to the working directory when below it (portable across checkouts)
    sha256: str
    author: str

    @property
    def label(self) -> str:
        return f"{self.problem}/{self.path.name}"


@dataclass(frozen=True)
class Outcome:
    submission: Submission
    result: RunResult
    cached: bool = False
    harness_error: bool = False


# -- discovery ---------------------------------------------------------------------------
def cache_owner(submission: Submission) -> str:
    """Whose compile caches a file's worker reuses: its author, and its path, which the organizer
    chose (an author line is the file's own claim: another file claiming the name gets another cache)."""
    return f"leaderboard\0{submission.author}\0{submission.path.resolve()}"


def git_author(path: Path) -> str | None:
    """The author of the file's last commit, or None outside git (or without git)."""
    try:
        out = subprocess.run(["git", "log", "-1", "--format=%an", "--", path.name], cwd=path.parent,
                             capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    name = out.stdout.strip()
    return name if out.returncode == 0 and name else None


def read_author(path: Path, text: str) -> str:
    """'#!POPCORN author <name>' (spaces allowed), else the last git author, else 'unknown'."""
    match = AUTHOR_LINE.search(text)
    return (match.group(1) if match else None) or git_author(path) or "unknown"


def _stored_path(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def discover(root: Path, problems: Sequence[str]) -> list[Submission]:
    """Every *.py below root/<problem>/ (recursively; __init__.py and hidden folders skipped)."""
    found = []
    for problem in sorted(problems):
        folder = root / problem
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder).parts
            if path.name == "__init__.py" or any(p.startswith(".") or p == "__pycache__" for p in relative):
                continue
            path = path.resolve()
            source = path.read_bytes()
            found.append(Submission(problem, path, _stored_path(path), hashlib.sha256(source).hexdigest(),
                                    read_author(path, source.decode("utf-8", errors="replace"))))
    return found


# -- longest first ---------------------------------------------------------------------------
def expected_durations(store: Store, submissions: Sequence[Submission]) -> dict[tuple[str, str], float | None]:
    """Seconds each file is expected to take: its own last stored run (elapsed_s), else the
    median of its problem's stored runs, else None (nothing known: it is scheduled first)."""
    seen: dict[tuple[str, str], float] = {}
    per_problem: dict[str, list[float]] = {}
    for problem in {s.problem for s in submissions}:
        for run in store.runs(problem):
            if run.harness_error or not run.result.elapsed_s:
                continue
            seen[(problem, run.sha256)] = run.result.elapsed_s  # oldest first: the last one wins
            per_problem.setdefault(problem, []).append(run.result.elapsed_s)
    return {(s.problem, s.sha256): seen.get((s.problem, s.sha256))
            or (statistics.median(per_problem[s.problem]) if s.problem in per_problem else None)
            for s in submissions}


def longest_first(jobs: Sequence[EvalJob]) -> list[EvalJob]:
    """Longest expected duration first (unknown ones before all), so the GPUs finish together."""
    return sorted(jobs, key=lambda job: -(job.expected_s if job.expected_s is not None else float("inf")))


def outcome_text(result: RunResult) -> str:
    """'passed 12.3 us geomean (41.0% of SOL)' or 'timeout: ...', for the progress line."""
    if result.status != Status.PASSED:
        reason = " ".join(result.reason.split())
        reason = reason if len(reason) <= 160 else reason[:159] + "…"
        return f"{result.status.value}: {reason}" if reason else result.status.value
    text = "passed"
    if result.geomean_us:
        value = result.geomean_us
        text += f" {value:.2f} us geomean" if value < 100 else f" {value:.1f} us geomean"
        if result.geomean_pct_of_sol:
            text += f" ({result.geomean_pct_of_sol:.1f}% of SOL)"
    return text if result.rankable else f"{text}; {why_not_rankable(result)}"


# -- the per-GPU check ----------------------------------------------------------------------
GPU_CHECK_PREFIX = "gpu-check/"


def pick_gpu_check(submissions: Sequence[Submission], expected: dict[tuple[str, str], float | None]) -> Submission:
    """'auto': the file expected to be quickest (the first file where nothing is known)."""
    known = [s for s in submissions if expected.get((s.problem, s.sha256))]
    return min(known, key=lambda s: expected[(s.problem, s.sha256)] or 0.0) if known else submissions[0]


def gpu_check_jobs(check: Submission, workers: Sequence[str], own: EvalJob | None, ledger_run: int,
                   done: set[str], template: EvalJob) -> tuple[EvalJob | None, list[EvalJob]]:
    """(the check file's own job pinned to the first worker, one copy per other worker): the same
    file and seed on every GPU. Where its own job is not run this time, a copy takes the first worker;
    a copy already stored (a resumed run) is not sent again."""
    pinned = dataclasses.replace(own, worker=workers[0]) if own is not None else None
    copies = [dataclasses.replace(template, key=gpu_check_key(ledger_run, check, worker), worker=worker,
                                  expected_s=None)
              for worker in (workers[1:] if pinned is not None else workers)]
    return pinned, [job for job in copies if job.key not in done]


def gpu_check_key(ledger_run: int, check: Submission, worker: str) -> str:
    return f"{GPU_CHECK_PREFIX}{ledger_run}/{check.problem}/{check.sha256}/{worker}"


# -- the whole run ---------------------------------------------------------------------------
STOP_POLL_S = 0.5  # how often a run that can be stopped looks at its stop flag


def scope_of(submissions: Sequence[Submission], device_name: str, force: bool,
             problems: Sequence[str] | None = None) -> ledger.Scope:
    return ledger.Scope(device_name, __version__, tuple(sorted(problems or {s.problem for s in submissions})), force)


def _planned(submission: Submission) -> ledger.Planned:
    return ledger.Planned(submission.problem, submission.stored_path, submission.sha256, submission.author)


def run_all(
    submissions: Sequence[Submission],
    store: Store,
    *,
    device: str,
    device_name: str,
    secret_seed: int | None = None,
    force: bool = False,
    executor: Executor | None = None,
    progress: Progress | Callable[[str], None] = print,
    ledger_run: int | None = None,
    stop: threading.Event | None = None,
    gpu_check: Submission | None = None,
) -> list[Outcome]:
    """Evaluate (or reuse) every submission and store each new run; return the finished ones in input order.

    ``executor`` runs the jobs (default: serially in this process); the store is written here, by
    the calling thread only, as each job comes back, each result under its entry's key in the
    leaderboard run ``ledger_run`` (default: the unfinished run of this scope, resumed, else a new
    one). ``stop`` set (the organizer's Ctrl-C) ends the run early: what came back is stored, the
    rest stays 'not run' in the ledger for the next command. ``gpu_check``, on an executor with
    several workers, is timed on every one of them (harness.leaderboard.gpu_agreement).
    Raises ClusterError when the cluster is lost for good (the ledger marks the run interrupted).
    """
    lock = threading.Lock()
    display = as_progress(progress)

    def say(line: str) -> None:
        with lock:
            display.note(line)

    def finished(line: str) -> None:  # one submission done: a line, and the live bar moves on
        with lock:
            display.step(line)

    connection = store.connection
    if ledger_run is None:
        ledger_run, _ = ledger.begin(connection, scope_of(submissions, device_name, force))
    entries = ledger.plan(connection, ledger_run, [_planned(s) for s in submissions])
    total = len(submissions)
    display.begin(total, "leaderboard")
    outcomes: dict[int, Outcome] = {}
    pending: dict[str, tuple[int, Submission]] = {}
    for index, submission in enumerate(submissions):
        entry = entries[ledger.entry_key(ledger_run, _planned(submission))]
        if entry.done and entry.run_id is not None:  # stored before this leaderboard run stopped
            result = ledger.stored_result(connection, entry.run_id)
            outcomes[index] = Outcome(submission, result, cached=True)
            finished(f"[{len(outcomes)}/{total}] {submission.label} ... done before the stop: {outcome_text(result)}")
            continue
        hit = None if force else store.cached(problem=submission.problem, sha256=submission.sha256,
                                              device_name=device_name, harness_version=__version__)
        if hit is None:
            pending[entry.run_key] = (index, submission)
            continue
        ledger.link(connection, entry.run_key, hit.id)
        outcomes[index] = Outcome(submission, hit.result, cached=True)
        finished(f"[{len(outcomes)}/{total}] {submission.label} ... cached: {outcome_text(hit.result)}")
    if not pending and gpu_check is None:
        ledger.finish(connection, ledger_run, interrupted=False)
        return [outcomes[index] for index in sorted(outcomes)]

    own = executor is None
    executor = executor or SerialExecutor(progress=lambda line: say(f"      {line}"))
    expected = expected_durations(store, submissions)
    jobs = longest_first([
        EvalJob(key=key, problem=s.problem, filename=s.path.name, source=s.path.read_bytes(), mode=RANKED_MODE.name,
                device=device, secret_seed=secret_seed, expected_s=expected[(s.problem, s.sha256)],
                cache_owner=cache_owner(s))
        for key, (_, s) in pending.items()
    ])
    checks: dict[str, str] = {}  # job key -> the gpu_checks key its result is a sample under
    workers = executor.workers() if gpu_check is not None else []
    if gpu_check is not None and len(workers) >= 2:
        own_key = ledger.entry_key(ledger_run, _planned(gpu_check))
        own_job = next((job for job in jobs if job.key == own_key), None)
        template = EvalJob(key="", problem=gpu_check.problem, filename=gpu_check.path.name,
                           source=gpu_check.path.read_bytes(), mode=RANKED_MODE.name, device=device,
                           secret_seed=secret_seed)
        pinned, copies = gpu_check_jobs(gpu_check, workers, own_job, ledger_run,
                                        ledger.gpu_sample_keys(connection, ledger_run), template)
        checks = {job.key: job.key for job in copies}
        if pinned is not None:
            checks[pinned.key] = gpu_check_key(ledger_run, gpu_check, workers[0])
            jobs = [job for job in jobs if job.key != pinned.key]
        jobs = [*([pinned] if pinned else []), *copies, *jobs]  # first: every worker starts on its copy
        say(f"GPU check: {gpu_check.label} on each of {len(workers)} workers ({', '.join(workers)})")
    elif gpu_check is not None:
        say(f"note: no GPU check: {len(workers) or 1} worker, nothing to compare {gpu_check.label} with")
    if not jobs:
        if own:
            executor.close()
        ledger.finish(connection, ledger_run, interrupted=False)
        return [outcomes[index] for index in sorted(outcomes)]

    say(f"running {len(pending)} submission(s) on {device_name}, longest first")
    unanswered = set(checks) - set(pending)  # check copies: no entry of their own
    try:
        for job in jobs:
            executor.submit(job)
        while (pending or unanswered) and not (stop is not None and stop.is_set()):
            for job, result in executor.completed(timeout_s=STOP_POLL_S if stop is not None else None):
                harness_error = is_harness_error(result)
                if job.key in checks and not harness_error:
                    ledger.add_gpu_sample(connection, ledger_run, checks[job.key], job.problem,
                                          hashlib.sha256(job.source).hexdigest(), result)
                unanswered.discard(job.key)
                if job.key not in pending:
                    continue
                index, submission = pending.pop(job.key)
                run_id = store.add(result, problem=submission.problem, submission_path=submission.stored_path,
                                   sha256=submission.sha256, author=submission.author, device_name=device_name,
                                   harness_error=harness_error, run_key=None if harness_error else job.key)
                ledger.link(connection, job.key, run_id)
                outcomes[index] = Outcome(submission, result, harness_error=harness_error)
                finished(f"[{len(outcomes)}/{total}] {submission.label} ... {outcome_text(result)}")
    finally:
        if own:
            executor.close()
        ledger.finish(connection, ledger_run, interrupted=bool(pending))
    return [outcomes[index] for index in sorted(outcomes)]
