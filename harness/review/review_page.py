"""What the organizer reads of a review: a terminal table (rich), a JSON document, one HTML page per problem.

The HTML page (templates/review.html beside the leaderboard's, autoescaped) sits at
``<out>/<problem>/review.html``, next to the leaderboard page that links it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness import __version__
from harness.display.tables import text_table
from harness.leaderboard.render import REVIEW_PAGE, TEMPLATES, fmt_time, fmt_us
from harness.review.findings import EntryReview, Verdict

VERDICT_CSS = {Verdict.CLEAN: "", Verdict.LOOK_HERE: "warn", Verdict.REPRODUCES_NOT: "bad"}


def file_label(review: EntryReview) -> str:
    return Path(review.submission).name


def _rerun_text(rerun: dict[str, Any] | None) -> str | None:
    if not rerun:
        return None
    score = f"{fmt_us(rerun['score_us'])} us, rank {rerun['rank']}" if rerun.get("score_us") else "no score"
    gpu = f" on GPU {rerun['gpu']}" if rerun.get("gpu") is not None else ""
    return f"{rerun['status']}, {score}{gpu} ({rerun.get('device') or '?'})"


def terminal_lines(reviews: Sequence[EntryReview], said: Sequence[str] = ()) -> list[str]:
    """One row per entry, then every flag under its entry, then what was not run (less the notes in
    ``said``, already printed once for the whole review)."""
    if not reviews:
        return ["no entry reviewed"]
    rows = [[r.problem, str(r.rank or "-"), r.author, file_label(r), fmt_us(r.score_us), r.verdict.value,
             str(len(r.flags))] for r in reviews]
    lines = text_table(["problem", "#", "author", "submission", "geomean us", "verdict", "flags"], rows,
                       right=(1, 4, 6))
    for review in reviews:
        not_run = [note for note in review.not_run if note not in said]
        if not review.flags and not not_run:
            continue
        lines.append("")
        lines.append(f"{review.problem} {file_label(review)}: {review.verdict.value}")
        lines += [f"  {f.klass.label:<26} {f.where or '-':<32} {f.evidence}" for f in review.flags]
        lines += [f"  not run: {note}" for note in not_run]
    return lines


def review_json(reviews: Sequence[EntryReview], generated_at: str, notes: Sequence[str] = ()) -> dict[str, Any]:
    return {"harness_version": __version__, "generated_at": generated_at, "notes": list(notes),
            "verdicts": [v.value for v in Verdict], "entries": [r.to_json() for r in reviews]}


def render_page(problem: str, reviews: Sequence[EntryReview], generated_at: str) -> str:
    entries = [{"rank": r.rank, "author": r.author, "file": file_label(r), "sha": r.sha256[:8],
                "score": fmt_us(r.score_us), "verdict": r.verdict.value, "css": VERDICT_CSS[r.verdict],
                "flags": [{"label": f.klass.label, "where": f.where, "evidence": f.evidence} for f in r.flags],
                "rerun": _rerun_text(r.rerun), "files": r.files, "not_run": r.not_run} for r in reviews]
    reviewed = max((r.reviewed_at for r in reviews), default="")
    return TEMPLATES.get_template(REVIEW_PAGE).render(problem=problem, entries=entries, harness_version=__version__,
                                                    reviewed_at=fmt_time(reviewed), generated_at=generated_at)


def write_page(out: Path, problem: str, reviews: Sequence[EntryReview], generated_at: str) -> Path:
    folder = out / problem
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / REVIEW_PAGE
    path.write_text(render_page(problem, reviews, generated_at), encoding="utf-8")
    return path
