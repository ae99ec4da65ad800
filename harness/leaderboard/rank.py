"""The ranking rule, as small pure functions over stored runs (no I/O, no clock).

Rule: per problem, on one device and harness version, a submission's score is the geometric
mean of its benchmark medians (lower is better). A file (by author and sha256: two authors who
upload the same bytes have two entries) counts with its best run; an author appears once in the
ranking, with their best file; their other files are listed below it. Runs that failed are
listed apart with their status label only: the raw reason can hold text the submission chose
(a crash message), and public pages must not be a channel for it (owners see it through the
service, organizers in the store). Runs that passed but are not rankable (CPU wall clock,
incomplete) are listed apart too. Neither kind is ever ranked. A file whose every run is a harness
failure is listed as not run, like a file an interrupted run did not reach: the next run retries it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from harness.contract.results import RunResult, Status
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.score import geometric_mean
from harness.leaderboard.gpu_agreement import GpuReading
from harness.leaderboard.ledger import Planned
from harness.leaderboard.store import StoredRun

TIE_DECIMALS_US = 3
"""Scores equal to the nanosecond share a rank (the earlier submission is listed first)."""

UNKNOWN_DEVICES = frozenset({"", "?"})
"""Device names stored for runs that never reached a GPU (the service's harness failures)."""


def score_us(run: RunResult) -> float | None:
    """Geometric mean of the benchmark medians; None unless every benchmark passed and was timed."""
    timed = [case for case in run.cases if case.kind == "benchmark"]
    if not timed:
        return run.geomean_us
    if any(case.status != Status.PASSED or case.timing is None for case in timed):
        return None
    return geometric_mean([case.timing.median_us for case in timed if case.timing])


def is_failure(run: RunResult) -> bool:
    return run.status not in (Status.PASSED, Status.NOT_RUN)


def status_label(run: RunResult) -> str:
    """The status as public pages show it: 'needs an sm_100 (Blackwell) GPU' rather than a crash.

    Only harness-composed text: the 'needs ...' head comes from harness.judge.verdict.hardware_verdict's fixed table;
    any other reason may hold what the submission printed, so it is never shown.
    """
    if run.status == Status.UNSUPPORTED and run.reason.startswith("needs "):
        return run.reason.split(":")[0]
    return run.status.value


def is_ranked(run: RunResult) -> bool:
    return run.status == Status.PASSED and run.rankable and score_us(run) is not None


def why_not_rankable(run: RunResult) -> str:
    """'not rankable (cpu)' and the like, for a run that did not fail yet cannot be ranked."""
    kind = str(run.device.get("type", "?"))
    if kind != "cuda":
        return f"not rankable ({kind})"
    if score_us(run) is None:
        return "not rankable (no complete timing)"
    if run.mode not in MODES or not MODES[run.mode].ranked:
        return f"not rankable ({run.mode} mode: public seeds)"
    return "not rankable (no secret seed, or an incomplete run)"


def tie_key(score: float) -> float:
    return round(score, TIE_DECIMALS_US)


def competition_ranks(scores: Sequence[float]) -> list[int]:
    """Ranks of scores sorted ascending, ties sharing the better rank: 1, 2, 2, 4."""
    ranks: list[int] = []
    for index, score in enumerate(scores):
        tied = index > 0 and tie_key(score) == tie_key(scores[index - 1])
        ranks.append(ranks[-1] if tied else index + 1)
    return ranks


@dataclass(frozen=True)
class Entry:
    """One submission file of one author (by author and sha256) as the board shows it."""

    stored: StoredRun
    score_us: float | None
    rank: int | None = None
    note: str = ""  # why it is not ranked: the status label or "not rankable (cpu)", never the raw reason

    @property
    def result(self) -> RunResult:
        return self.stored.result


@dataclass(frozen=True)
class Board:
    problem: str
    device_name: str | None
    harness_version: str | None
    ranking: list[Entry] = field(default_factory=list)  # one per author, best first
    others: list[Entry] = field(default_factory=list)  # authors' other rankable files
    not_rankable: list[Entry] = field(default_factory=list)
    failed: list[Entry] = field(default_factory=list)
    hidden_runs: int = 0  # runs on another device or harness version, left out
    updated_at: str = ""  # the latest run shown
    not_run: list[Planned] = field(default_factory=list)  # planned by the last leaderboard run, no result (stopped)
    gpus: list[GpuReading] = field(default_factory=list)  # that run's per-GPU check, where it had several GPUs

    @property
    def charted(self) -> list[Entry]:
        return self.ranking + self.others


def reached_a_device(run: StoredRun) -> bool:
    """Whether a run can pick the board's device: a harness failure ('?', no device) must not
    move the board off every real run."""
    return run.device_name not in UNKNOWN_DEVICES and not run.harness_error


def _scope(runs: Sequence[StoredRun], device_name: str | None, version: str | None) -> tuple[str | None, str | None]:
    """The device and harness version the board is for: as asked when runs match, else the latest
    real run's (the latest run's only when no run reached a device)."""
    if any(r.device_name == device_name and r.result.harness_version == version for r in runs):
        return device_name, version
    if not runs:
        return device_name, version
    latest = max([r for r in runs if reached_a_device(r)] or runs, key=lambda r: r.id)
    return latest.device_name, latest.result.harness_version


def _order(entry: Entry) -> tuple[float, str, int]:
    return (entry.score_us if entry.score_us is not None else math.inf, entry.stored.recorded_at, entry.stored.id)


def _by_path(entry: Entry) -> tuple[str, int]:
    return entry.stored.submission_path, entry.stored.id


def _entries(shown: Sequence[StoredRun]) -> dict[tuple[str, str], list[StoredRun]]:
    """Runs grouped by (author, sha256): the same bytes uploaded by two people are two entries,
    so one author's upload can neither take over nor hide another's."""
    by_file: dict[tuple[str, str], list[StoredRun]] = {}
    for run in shown:
        by_file.setdefault((run.author, run.sha256), []).append(run)
    return by_file


def _file_entry(file_runs: Sequence[StoredRun]) -> tuple[str, Entry]:
    """('ranked' | 'failed' | 'not_rankable' | 'not_run', entry): the best ranked run, else the latest
    run that is the file's own verdict; 'not_run' when the harness failed on every run of it (its
    Dask worker died twice, the evaluator raised): nothing is known of the file, and the next run
    retries it."""
    if all(r.harness_error for r in file_runs):
        return "not_run", Entry(max(file_runs, key=lambda r: r.id), None)
    file_runs = [r for r in file_runs if not r.harness_error]
    ranked = [Entry(r, score_us(r.result)) for r in file_runs if is_ranked(r.result)]
    if ranked:
        return "ranked", min(ranked, key=_order)
    latest = max(file_runs, key=lambda r: r.id)
    if is_failure(latest.result):
        return "failed", Entry(latest, None, note=status_label(latest.result))
    return "not_rankable", Entry(latest, score_us(latest.result), note=why_not_rankable(latest.result))


def _one_per_author(candidates: list[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(ranking, others): each author's best entry ranked, their other entries listed below."""
    best, others, authors = [], [], set()
    for entry in sorted(candidates, key=_order):
        (others if entry.stored.author in authors else best).append(entry)
        authors.add(entry.stored.author)
    ranks = competition_ranks([e.score_us for e in best if e.score_us is not None])
    return [Entry(e.stored, e.score_us, rank) for e, rank in zip(best, ranks)], others


def build_board(problem: str, runs: Iterable[StoredRun], device_name: str | None = None,
                harness_version: str | None = None) -> Board:
    """Apply the ranking rule to one problem's stored runs."""
    runs = [r for r in runs if r.problem == problem]
    device_name, harness_version = _scope(runs, device_name, harness_version)
    shown = [r for r in runs if r.device_name == device_name and r.result.harness_version == harness_version]
    kinds: dict[str, list[Entry]] = {"ranked": [], "failed": [], "not_rankable": [], "not_run": []}
    for file_runs in _entries(shown).values():
        kind, entry = _file_entry(file_runs)
        kinds[kind].append(entry)
    ranking, others = _one_per_author(kinds["ranked"])
    return Board(
        problem=problem,
        device_name=device_name,
        harness_version=harness_version,
        ranking=ranking,
        others=others,
        not_rankable=sorted(kinds["not_rankable"], key=_by_path),
        failed=sorted(kinds["failed"], key=_by_path),
        hidden_runs=len(runs) - len(shown),
        updated_at=max((r.recorded_at for r in shown), default=""),
        not_run=sorted((Planned(e.stored.problem, e.stored.submission_path, e.stored.sha256, e.stored.author)
                        for e in kinds["not_run"]), key=lambda p: p.submission_path),
    )


def with_run_state(board: Board, planned_not_run: Sequence[Planned], gpus: Sequence[GpuReading]) -> Board:
    """The board with the last leaderboard run's unfinished entries and per-GPU check added.

    A planned entry is listed as not run only where the board shows no run of that file (author and
    sha256): an interrupted --force run leaves the file's earlier run on the board, once.
    """
    shown = {(e.stored.author, e.stored.sha256) for e in board.ranking + board.others + board.not_rankable
             + board.failed} | {(p.author, p.sha256) for p in board.not_run}
    missing = []
    for planned in planned_not_run:  # one per author and sha256, as the ranking counts files
        if planned.problem == board.problem and (planned.author, planned.sha256) not in shown:
            shown.add((planned.author, planned.sha256))
            missing.append(planned)
    return replace(board, not_run=sorted([*board.not_run, *missing], key=lambda p: p.submission_path),
                   gpus=list(gpus))
