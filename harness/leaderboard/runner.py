"""Find every submission file, evaluate each in ranked mode (or reuse a stored run), store it.

Why it is careful: one organizer run covers every contestant, so nothing one file does may stop
it. The evaluator isolates the submission itself; this module also turns any exception the
evaluator raises into a stored "crashed" run and moves on. With several identical GPUs it runs
one submission per GPU, each thread pinning its evaluation through ``visible_devices``.
"""

from __future__ import annotations

import datetime
import hashlib
import queue
import re
import subprocess
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from harness import __version__
from harness.leaderboard.rank import why_not_rankable
from harness.leaderboard.store import Store
from harness.results import RunResult, Status

Progress = Callable[[str], None]
Evaluate = Callable[..., RunResult]
AUTHOR_LINE = re.compile(r"^#!POPCORN\s+author\s+(.+?)\s*$", re.MULTILINE | re.IGNORECASE)
MODE = "leaderboard"


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


# -- one evaluation --------------------------------------------------------------------------
def real_evaluate(problem: str, submission: Path, **options: object) -> RunResult:
    """The evaluator, imported when first used (it pulls in torch and the worker machinery)."""
    from harness.evaluate import evaluate_submission

    return evaluate_submission(problem, submission, **options)


def crashed_run(submission: Submission, device: str, device_name: str, error: BaseException) -> RunResult:
    """The record of an evaluation that raised instead of returning a RunResult."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return RunResult(
        problem=submission.problem,
        submission_path=str(submission.path),
        submission_sha256=submission.sha256,
        mode=MODE,
        device={"type": device, "name": device_name},
        harness_version=__version__,
        status=Status.CRASHED,
        reason=f"the evaluator raised {type(error).__name__}: {error}{where} "
               "(a harness error, not the submission's: the next run retries it)",
        author=submission.author,
        started_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )


def evaluate_one(evaluate: Evaluate, submission: Submission, *, device: str, device_name: str,
                 secret_seed: int | None, visible_devices: str | None, progress: Progress) -> Outcome:
    try:
        result = evaluate(submission.problem, submission.path, mode=MODE, device=device, secret_seed=secret_seed,
                          visible_devices=visible_devices, progress=progress)
        if not isinstance(result, RunResult):
            raise TypeError(f"expected a RunResult, got {type(result).__name__}")
    except Exception as error:  # any failure of one evaluation is recorded, never fatal to the run
        return Outcome(submission, crashed_run(submission, device, device_name, error), harness_error=True)
    return Outcome(submission, result)


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


# -- the whole run ---------------------------------------------------------------------------
def run_all(
    submissions: Sequence[Submission],
    store: Store,
    *,
    device: str,
    device_name: str,
    secret_seed: int | None = None,
    force: bool = False,
    gpu_count: int = 0,
    evaluate: Evaluate | None = None,
    progress: Progress = print,
) -> list[Outcome]:
    """Evaluate (or reuse) every submission and store each new run; return them in input order."""
    evaluate = evaluate or real_evaluate
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            progress(line)

    total = len(submissions)
    outcomes: dict[int, Outcome] = {}
    pending: list[tuple[int, Submission]] = []
    for index, submission in enumerate(submissions, 1):
        hit = None if force else store.cached(problem=submission.problem, sha256=submission.sha256,
                                              device_name=device_name, harness_version=__version__)
        if hit is None:
            pending.append((index, submission))
            continue
        outcomes[index] = Outcome(submission, hit.result, cached=True)
        say(f"[{index}/{total}] {submission.label} ... cached: {outcome_text(hit.result)}")

    def record(index: int, outcome: Outcome) -> None:
        store.add(outcome.result, problem=outcome.submission.problem, submission_path=outcome.submission.stored_path,
                  sha256=outcome.submission.sha256, author=outcome.submission.author, device_name=device_name,
                  harness_error=outcome.harness_error)
        outcomes[index] = outcome
        say(f"[{index}/{total}] {outcome.submission.label} ... {outcome_text(outcome.result)}")

    common = {"device": device, "device_name": device_name, "secret_seed": secret_seed}
    if device == "cuda" and gpu_count > 1 and len(pending) > 1:
        say(f"running {len(pending)} submissions in parallel, one per GPU on {gpu_count} GPUs")
        free: queue.Queue[int] = queue.Queue()
        for gpu in range(gpu_count):
            free.put(gpu)

        def job(index: int, submission: Submission) -> tuple[int, Outcome]:
            gpu = free.get()  # never blocks: there are as many threads as GPUs
            try:
                say(f"[{index}/{total}] {submission.label} ... started on GPU {gpu}")

                def detail(line: str) -> None:
                    say(f"      gpu{gpu} {submission.label}: {line}")

                return index, evaluate_one(evaluate, submission, visible_devices=str(gpu), progress=detail, **common)
            finally:
                free.put(gpu)

        with ThreadPoolExecutor(max_workers=gpu_count, thread_name_prefix="leaderboard-gpu") as pool:
            futures = [pool.submit(job, index, submission) for index, submission in pending]
            for future in as_completed(futures):
                record(*future.result())  # the store is written from this thread only
    else:
        if pending:
            say(f"running {len(pending)} submission(s) one after another on {device_name}")
        for index, submission in pending:
            say(f"[{index}/{total}] {submission.label} ...")
            outcome = evaluate_one(evaluate, submission, visible_devices=None,
                                   progress=lambda line: say(f"      {line}"), **common)
            record(index, outcome)
    return [outcomes[index] for index in sorted(outcomes)]
