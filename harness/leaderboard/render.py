"""A board as LEADERBOARD.md, a self-contained HTML page (inline CSS and SVG, no JS) and JSON.

Why self-contained: the pages travel as a CI artifact and are opened from disk, so they must
not fetch anything. The HTML comes from the Jinja2 templates in ``templates/`` (autoescaped);
the functions here compute what they show (numbers, chart geometry) as plain data. Every
function is pure text in, text out; ``write_site`` writes files.

Why no failure reasons: these pages are public, and a reason can hold whatever the submission
printed or raised (another user's code, a secret it could read). A run that did not pass shows
its status label only (rank.status_label); the reason stays in the store and the service API.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import jinja2

from harness.contract.task_spec import shape_text
from harness.leaderboard.gpu_agreement import AGREEMENT_TOLERANCE_PCT, GpuReading, gpu_id
from harness.leaderboard.ledger import Planned
from harness.leaderboard.rank import Board, Entry, status_label

PALETTE = ("#2563eb", "#f97316", "#16a34a", "#db2777", "#7c3aed", "#0891b2",
           "#ca8a04", "#dc2626", "#475569", "#65a30d", "#9333ea", "#0d9488")
MAX_CHARTED = len(PALETTE)
"""Bars get one colour per submission; past twelve the chart shows the first twelve."""

NONE = "\u2013"  # an en dash where a value is missing

REVIEW_PAGE = "review.html"
"""The organizer's review of a problem (harness review), written beside its leaderboard page."""

SCORE_RULE = "geometric mean of the benchmark medians (lower is better); one entry per author"

TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "templates"),
                               autoescape=True, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                               undefined=jinja2.StrictUndefined)
TEMPLATES.filters["f1"] = lambda value: f"{value:.1f}"  # SVG coordinates to a tenth of a pixel


# -- small formatting helpers ------------------------------------------------------------
def shape_label(case: dict[str, Any]) -> str:
    """A benchmark shape in a few characters, for a chart's axis: a list (grouped GEMM) shows as value x
    count or its range ('m=64..176 n=4096x3'); the whole shape is ``shape_text``."""
    parts = []
    for key, value in case.items():
        if key == "seed":
            continue
        if isinstance(value, list) and value:
            value = f"{value[0]}x{len(value)}" if len(set(value)) == 1 else f"{min(value)}..{max(value)}"
        parts.append(f"{key}={value}")
    return " ".join(parts)


def fmt_us(value: float | None) -> str:
    if value is None or math.isnan(value):
        return NONE
    return f"{value:.3f}" if value < 10 else f"{value:.2f}" if value < 100 else f"{value:.1f}"


def fmt_pct(value: float | None) -> str:
    return NONE if value is None else f"{value:.1f}%"


def file_name(entry: Entry, problem: str) -> str:
    """The path below submissions/<problem>/ (the file name for files stored elsewhere)."""
    path = "/" + entry.stored.submission_path.replace("\\", "/")
    marker = f"/{problem}/"
    return path.rsplit(marker, 1)[1] if marker in path else path.rsplit("/", 1)[-1]


def fmt_time(stamp: str) -> str:
    """'2025-06-01T12:00:00+00:00' as '2025-06-01 12:00' (UTC, as stored)."""
    return stamp.replace("T", " ")[:16] if stamp else NONE


def one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def benchmark_shapes(entries: Sequence[Entry]) -> list[dict[str, Any]]:
    """The benchmark cases of these entries, in order of first appearance (seeds dropped)."""
    seen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        for case in entry.result.cases:
            if case.kind == "benchmark":
                seen.setdefault(shape_text(case.case), {k: v for k, v in case.case.items() if k != "seed"})
    return list(seen.values())


def per_shape(entry: Entry, shapes: Sequence[dict[str, Any]]) -> list[tuple[float | None, float | None]]:
    """(median_us, pct_of_sol) of an entry on each shape; None where it has no timing there."""
    found = {shape_text(c.case): c for c in entry.result.cases if c.kind == "benchmark"}
    values = []
    for shape in shapes:
        case = found.get(shape_text(shape))
        values.append((case.timing.median_us if case and case.timing else None, case.pct_of_sol if case else None))
    return values


# -- JSON ------------------------------------------------------------------------------------
def _entry_json(entry: Entry, shapes: Sequence[dict[str, Any]], problem: str) -> dict[str, Any]:
    result = entry.result
    record: dict[str, Any] = {
        "author": entry.stored.author,
        "submission": entry.stored.submission_path,
        "file": file_name(entry, problem),
        "sha256": entry.stored.sha256,
        "status": result.status.value,
        "status_label": status_label(result),
        "run_id": entry.stored.id,
        "recorded_at": entry.stored.recorded_at,
        "device": result.device,
    }
    if result.device.get("type") == "cuda":
        record["gpu"] = gpu_id(result.device)
    if entry.rank is not None:
        record["rank"] = entry.rank
    if entry.note:
        record["note"] = entry.note
    if entry.score_us is not None:
        record["score_us"] = entry.score_us
        record["geomean_pct_of_sol"] = result.geomean_pct_of_sol
        record["geomean_pct_of_vendor"] = result.geomean_pct_of_vendor
        record["benchmarks"] = [
            {"shape": shape, "median_us": median, "pct_of_sol": pct}
            for shape, (median, pct) in zip(shapes, per_shape(entry, shapes))
        ]
    return record


def board_json(board: Board, generated_at: str) -> dict[str, Any]:
    shapes = benchmark_shapes(board.charted)
    return {
        "problem": board.problem,
        "device": board.device_name,
        "harness_version": board.harness_version,
        "updated_at": board.updated_at,
        "generated_at": generated_at,
        "score": SCORE_RULE,
        "benchmarks": shapes,
        "ranking": [_entry_json(e, shapes, board.problem) for e in board.ranking],
        "others": [_entry_json(e, shapes, board.problem) for e in board.others],
        "not_rankable": [_entry_json(e, shapes, board.problem) for e in board.not_rankable],
        "failed": [_entry_json(e, shapes, board.problem) for e in board.failed],
        "not_run": [_not_run_json(p) for p in board.not_run],
        "gpu_agreement": [_gpu_json(g) for g in board.gpus],
        "gpu_tolerance_pct": AGREEMENT_TOLERANCE_PCT,
        "hidden_runs": board.hidden_runs,
    }


def _not_run_json(planned: Planned) -> dict[str, Any]:
    return {"author": planned.author, "submission": planned.submission_path,
            "file": planned.submission_path.rsplit("/", 1)[-1], "sha256": planned.sha256, "status": "not_run"}


def _gpu_json(reading: GpuReading) -> dict[str, Any]:
    return {"gpu": reading.gpu, "label": reading.label, "check": reading.check, "ratio_to_peers": reading.ratio,
            "off_pct": reading.off_pct, "worst_shape_pct": reading.worst_shape_pct, "flagged": reading.flagged}


# -- the run's state: not run entries, the per-GPU check ---------------------------------------
NOT_RUN_NOTE = ("no verdict yet: the last leaderboard run stopped before they ran, or the harness failed on them "
                "(a worker lost twice); the next run runs them")


def gpu_rows(board: Board) -> list[dict[str, Any]]:
    """The per-GPU check as the pages show it, with the files ranked from each GPU."""
    on_gpu: dict[str, list[str]] = {}
    for entry in board.charted:
        on_gpu.setdefault(gpu_id(entry.result.device), []).append(file_name(entry, board.problem))
    return [{"label": g.label, "check": g.check, "off": NONE if g.off_pct is None else f"{g.off_pct:+.2f}%",
             "worst": fmt_pct(g.worst_shape_pct), "flagged": g.flagged, "files": ", ".join(on_gpu.get(g.gpu, [])),
             "verdict": (f"more than {AGREEMENT_TOLERANCE_PCT:g}% off its peers: the ranks of files timed on it "
                         "may depend on the card" if g.flagged else
                         "no peer to compare with" if g.ratio is None else "agrees")} for g in board.gpus]


# -- Markdown --------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return one_line(text).replace("|", "\\|")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(board: Board, generated_at: str) -> str:
    shapes = benchmark_shapes(board.charted)
    p = board.problem
    lines = [f"# {p} leaderboard", "",
             f"Device: **{board.device_name or '?'}** · harness {board.harness_version or '?'} · "
             f"updated {fmt_time(board.updated_at)} UTC · generated {generated_at}", "",
             f"Score: {SCORE_RULE}.", ""]
    shape_cols = [f"shape {i + 1} (µs)" for i in range(len(shapes))]

    def timed_row(entry: Entry, rank: str) -> list[str]:
        medians = [fmt_us(m) for m, _ in per_shape(entry, shapes)]
        return [rank, entry.stored.author, f"{file_name(entry, p)} `{entry.stored.sha256[:8]}`",
                fmt_us(entry.score_us), fmt_pct(entry.result.geomean_pct_of_sol),
                fmt_pct(entry.result.geomean_pct_of_vendor), *medians,
                fmt_time(entry.stored.recorded_at)]

    lines += ["## Ranking", ""]
    if board.ranking:
        lines += _md_table(["#", "author", "submission", "geomean (µs)", "% of SOL", "% of vendor", *shape_cols,
                            "run at (UTC)"],
                           [timed_row(e, str(e.rank)) for e in board.ranking])
    else:
        lines.append("No rankable run yet.")
    if shapes:
        lines += ["", "Shapes: " + "; ".join(f"{i + 1} = {shape_text(s)}" for i, s in enumerate(shapes)) + "."]
    if board.others:
        lines += ["", "## Other entries", "", "Rankable files that are not their author's best.", ""]
        lines += _md_table(["", "author", "submission", "geomean (µs)", "% of SOL", "% of vendor", *shape_cols,
                            "run at (UTC)"],
                           [timed_row(e, NONE) for e in board.others])
    if board.not_rankable:
        lines += ["", "## Not rankable", ""]
        lines += _md_table(["submission", "author", "geomean (µs)", "note"],
                           [[file_name(e, p), e.stored.author, fmt_us(e.score_us), e.note] for e in board.not_rankable])
    if board.failed:
        lines += ["", "## Failed", ""]
        lines += _md_table(["submission", "author", "status"],
                           [[file_name(e, p), e.stored.author, status_label(e.result)] for e in board.failed])
    if board.not_run:
        lines += ["", "## Not run", "", NOT_RUN_NOTE[0].upper() + NOT_RUN_NOTE[1:] + ".", ""]
        lines += _md_table(["submission", "author"], [[p.submission_path.rsplit("/", 1)[-1], p.author]
                                                      for p in board.not_run])
    if board.gpus:
        lines += ["", "## GPU agreement", "", f"One file timed with the same seed on every GPU of the run; a GPU "
                  f"more than {AGREEMENT_TOLERANCE_PCT:g}% off its peers (geometric mean of its median ratios) is "
                  "flagged.", ""]
        lines += _md_table(["GPU", "check file", "off its peers", "largest shape", "verdict", "files timed on it"],
                           [[r["label"], r["check"], r["off"], r["worst"], ("**FLAGGED** " if r["flagged"] else "")
                             + r["verdict"], r["files"] or NONE] for r in gpu_rows(board)])
    if board.hidden_runs:
        lines += ["", f"{board.hidden_runs} stored run(s) from other devices or harness versions are not shown."]
    return "\n".join(lines) + "\n"


# -- SVG chart -------------------------------------------------------------------------------
def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at or above value (the axis top)."""
    if value <= 0 or math.isnan(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value * (1 - 1e-9))


def chart_data(board: Board) -> dict[str, Any] | None:
    """The chart's geometry (None: nothing to chart): grouped bars, one group per benchmark shape,
    one bar per submission (% of SOL, else µs); templates/chart.html draws it."""
    entries = board.charted[:MAX_CHARTED]
    shapes = benchmark_shapes(entries)
    if not entries or not shapes:
        return None
    values = [per_shape(e, shapes) for e in entries]
    use_sol = any(pct is not None for vals in values for _, pct in vals)
    axis = "% of speed of light (higher is better)" if use_sol else "median time, µs (lower is better)"
    top = nice_ceiling(max(((pct if use_sol else median) or 0.0) for vals in values for median, pct in vals))
    width, left, right, top_pad, plot_h = 1100, 70, 20, 24, 300
    legend_cols, base = 3, top_pad + plot_h
    height = base + 64 + 26 * math.ceil(len(entries) / legend_cols) + 12
    plot_w = width - left - right
    group_w = plot_w / len(shapes)
    bar_w = min(56.0, group_w * 0.8 / len(entries))
    ticks = [{"y": base - plot_h * s / 5, "text_y": base - plot_h * s / 5 + 4,
              "label": f"{top * s / 5:g}" + ("%" if use_sol else "")} for s in range(6)]
    groups = []
    for g, shape in enumerate(shapes):
        x0 = left + g * group_w + (group_w - bar_w * len(entries)) / 2
        bars = []
        for b, entry in enumerate(entries):
            median, pct = values[b][g]
            value = pct if use_sol else median
            if value is None:
                continue
            h = plot_h * min(value, top) / top
            x, y = x0 + b * bar_w, base - h
            tip = (f"{entry.stored.author} · {file_name(entry, board.problem)} · {shape_text(shape)}: "
                   f"{fmt_us(median)} µs" + (f", {fmt_pct(pct)} of SOL" if pct is not None else ""))
            text = (f"{value:.0f}%" if use_sol else fmt_us(value)) if bar_w >= 30 else None
            bars.append({"x": x + 1, "y": y, "w": max(bar_w - 2, 1), "h": h, "colour": PALETTE[b],
                         "other": entry.rank is None, "title": tip, "value": text, "value_x": x + bar_w / 2,
                         "value_y": y - 5})
        groups.append({"x": left + (g + 0.5) * group_w, "label": shape_label(shape), "shape": shape_text(shape),
                       "bars": bars})
    legend = []
    for b, entry in enumerate(entries):
        x, y = left + (b % legend_cols) * (plot_w / legend_cols), base + 70 + (b // legend_cols) * 26
        label = f"{entry.stored.author} · {file_name(entry, board.problem)}"
        label = one_line(f"#{entry.rank} {label}" if entry.rank is not None else f"{label} (other)", 48)
        legend.append({"x": x, "y": y, "swatch_y": y - 12, "text_x": x + 22, "colour": PALETTE[b],
                       "other": entry.rank is None, "label": label})
    return {"width": width, "height": height, "left": left, "right": width - right, "tick_x": left - 8,
            "base": base, "group_y": base + 22, "shape_y": base + 40, "axis": axis, "axis_y": top_pad + plot_h / 2,
            "ticks": ticks, "groups": groups, "legend": legend, "charted": len(entries), "total": len(board.charted)}


def render_chart(board: Board) -> str:
    """The chart as an SVG fragment (a note where there is nothing to chart)."""
    return TEMPLATES.get_template("chart.html").render(chart=chart_data(board)).strip()


# -- HTML ------------------------------------------------------------------------------------
def _row(entry: Entry, problem: str, shapes: Sequence[dict[str, Any]], colour: str | None = None) -> dict[str, Any]:
    """What a table row shows of an entry, formatted (the templates escape it)."""
    return {"rank": entry.rank, "author": entry.stored.author, "file": file_name(entry, problem),
            "sha": entry.stored.sha256[:8], "colour": colour, "faded": entry.rank is None,
            "score": fmt_us(entry.score_us), "sol": fmt_pct(entry.result.geomean_pct_of_sol),
            "vendor": fmt_pct(entry.result.geomean_pct_of_vendor),
            "medians": [fmt_us(m) for m, _ in per_shape(entry, shapes)], "when": fmt_time(entry.stored.recorded_at)}


def _listed_row(entry: Entry, problem: str, failed: bool) -> dict[str, Any]:
    """A not rankable row (its harness-written note) or a failed one (its status label, never the reason)."""
    if failed:
        return {**_row(entry, problem, []), "status": status_label(entry.result), "text": None}
    return {**_row(entry, problem, []), "status": "passed", "text": one_line(entry.note or NONE, 300)}


def render_html(board: Board, generated_at: str, review_page: str | None = None) -> str:
    """The board's page; ``review_page``: the organizer's review beside it (harness review), linked."""
    shapes = benchmark_shapes(board.charted)
    colours = {id(e): PALETTE[i] for i, e in enumerate(board.charted[:MAX_CHARTED])}
    p = board.problem
    return TEMPLATES.get_template("board.html").render(
        problem=p, device=board.device_name or "?", harness_version=board.harness_version,
        updated=fmt_time(board.updated_at), generated_at=generated_at, score_rule=SCORE_RULE,
        chart=chart_data(board), shapes=[shape_text(s) for s in shapes],
        ranking=[_row(e, p, shapes, colours.get(id(e))) for e in board.ranking],
        others=[_row(e, p, shapes, colours.get(id(e))) for e in board.others],
        not_rankable=[_listed_row(e, p, False) for e in board.not_rankable],
        failed=[_listed_row(e, p, True) for e in board.failed], hidden_runs=board.hidden_runs, review_page=review_page,
        not_run=[{"file": n.submission_path.rsplit("/", 1)[-1], "author": n.author, "sha": n.sha256[:8]}
                 for n in board.not_run], not_run_note=NOT_RUN_NOTE, gpus=gpu_rows(board),
        gpu_tolerance_pct=f"{AGREEMENT_TOLERANCE_PCT:g}")


def render_index(boards: Sequence[Board], generated_at: str) -> str:
    rows = [{"problem": b.problem, "device": b.device_name or "?", "ranked": len(b.ranking),
             "unranked": len(b.not_rankable), "failed": len(b.failed), "not_run": len(b.not_run),
             "flagged_gpus": sum(g.flagged for g in b.gpus),
             "leader": b.ranking[0].stored.author if b.ranking else None,
             "score": fmt_us(b.ranking[0].score_us) if b.ranking else NONE, "updated": fmt_time(b.updated_at)}
            for b in boards]
    return TEMPLATES.get_template("index.html").render(rows=rows, generated_at=generated_at, none_mark=NONE)


def write_site(boards: Sequence[Board], out: Path, generated_at: str, reviewed: Collection[str] = ()) -> list[Path]:
    """Write <problem>/{LEADERBOARD.md,index.html,leaderboard.json} per board and index.html; the pages of
    problems in ``reviewed`` link their review.html (harness review writes it beside them)."""
    written = []
    for board in boards:
        directory = out / board.problem
        directory.mkdir(parents=True, exist_ok=True)
        files = {
            "LEADERBOARD.md": render_markdown(board, generated_at),
            "index.html": render_html(board, generated_at, REVIEW_PAGE if board.problem in reviewed else None),
            "leaderboard.json": json.dumps(board_json(board, generated_at), indent=2) + "\n",
        }
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8")
            written.append(directory / name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.html").write_text(render_index(boards, generated_at), encoding="utf-8")
    written.append(out / "index.html")
    return written
