"""Does a fresh ranked run reproduce the stored one? Its rank, within the stored run's spread.

Spread: the stored run's score is the geometric mean of its shapes' medians; its spread is the same
mean over the shapes' 10th and 90th percentiles, widened by REPRODUCE_MARGIN for run-to-run drift.
A fresh score inside that band reproduces whatever rank it gives; outside it, the rank must be the
same. A fresh run that fails is not a reproduction; one the harness could not make (its own fault,
hardware this machine lacks) is a check not run, never blamed on the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.contract.results import RunResult, Status
from harness.execution.eval_job import HarnessFailure
from harness.judge.verdict.score import geometric_mean
from harness.leaderboard.rank import competition_ranks, score_us
from harness.review.findings import Flag, FlagClass, one_line

REPRODUCE_MARGIN = 0.05
"""How far past the stored p10-p90 band a fresh score may land: ten back-to-back ranked runs of one
kernel on an H100 spread 4.58-4.81 us (5%; docs/timing.md, "The ladder")."""

NOT_THE_ENTRYS = (Status.BAD_INPUT, Status.UNSUPPORTED, Status.HARNESS_FAULT)
"""Fresh-run statuses that say nothing about the entry: the harness refused, or this machine lacks what it needs."""


def spread_us(result: RunResult) -> tuple[float, float] | None:
    """(low, high): geometric means of the benchmark shapes' p10 and p90, without the margin."""
    timings = [c.timing for c in result.cases if c.kind == "benchmark" and c.timing]
    low = geometric_mean([t.p10_us for t in timings])
    high = geometric_mean([t.p90_us for t in timings])
    return (low, high) if low and high else None


def rank_among(score: float, others: Sequence[float]) -> int:
    """The rank ``score`` would take among the other entries' scores (ties share the better rank)."""
    ordered = sorted([*others, score])
    return competition_ranks(ordered)[ordered.index(score)]


def compare(stored: RunResult, stored_rank: int | None, fresh: RunResult,
            other_scores: Sequence[float]) -> tuple[list[Flag], list[str], dict[str, Any]]:
    """(flags, notes, summary) of a fresh ranked run against the stored one."""
    summary: dict[str, Any] = {"status": fresh.status.value, "device": fresh.device.get("name"),
                               "score_us": None, "rank": None, "spread_us": None}
    if isinstance(fresh, HarnessFailure) or fresh.status in NOT_THE_ENTRYS:
        return [], [f"fresh ranked run: not made ({fresh.status.value}: {one_line(fresh.reason, 200)})"], summary
    if fresh.status != Status.PASSED:
        return [Flag(FlagClass.RERUN, one_line(f"a fresh ranked run ended {fresh.status.value}: {fresh.reason}"),
                     rule="rerun")], [], summary
    fresh_score, stored_score, band = score_us(fresh), score_us(stored), spread_us(stored)
    if not fresh.rankable or fresh_score is None or stored_score is None or band is None:
        return [], ["fresh ranked run: passed but not rankable here, so nothing to compare"], summary
    low, high = band[0] / (1 + REPRODUCE_MARGIN), band[1] * (1 + REPRODUCE_MARGIN)
    fresh_rank = rank_among(fresh_score, other_scores)
    summary.update(score_us=fresh_score, rank=fresh_rank, spread_us=[low, high])
    inside = low <= fresh_score <= high
    if inside or (stored_rank is not None and fresh_rank == stored_rank):
        return [], [], summary
    where = f"rank {stored_rank}" if stored_rank is not None else "its place"
    return [Flag(FlagClass.RERUN, f"{where} does not reproduce: stored {stored_score:.3f} us (spread {low:.3f}-"
                 f"{high:.3f} us with the {REPRODUCE_MARGIN:.0%} margin), fresh {fresh_score:.3f} us, which ranks "
                 f"{fresh_rank}", rule="rerun")], [], summary
