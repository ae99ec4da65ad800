"""A board as LEADERBOARD.md, a self-contained HTML page (inline CSS and SVG, no JS) and JSON.

Why self-contained: the pages travel as a CI artifact and are opened from disk, so they must
not fetch anything. Every function here is pure text in, text out; ``write_site`` writes files.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.leaderboard.rank import Board, Entry, status_label

PALETTE = ("#2563eb", "#f97316", "#16a34a", "#db2777", "#7c3aed", "#0891b2",
           "#ca8a04", "#dc2626", "#475569", "#65a30d", "#9333ea", "#0d9488")
MAX_CHARTED = len(PALETTE)
"""Bars get one colour per submission; past twelve the chart shows the first twelve."""

NONE = "\u2013"  # an en dash where a value is missing

SCORE_RULE = "geometric mean of the benchmark medians (lower is better); one entry per author"


# -- small formatting helpers ------------------------------------------------------------
def shape_label(case: dict[str, Any]) -> str:
    """A benchmark shape in a few characters: a list (grouped GEMM) shows as value x count or its range."""
    parts = []
    for key, value in case.items():
        if key == "seed":
            continue
        if isinstance(value, list) and value:
            value = f"{value[0]}x{len(value)}" if len(set(value)) == 1 else f"{min(value)}..{max(value)}"
        parts.append(f"{key}={value}")
    return " ".join(parts)


def full_shape(case: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in case.items() if k != "seed")


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
                seen.setdefault(full_shape(case.case), {k: v for k, v in case.case.items() if k != "seed"})
    return list(seen.values())


def per_shape(entry: Entry, shapes: Sequence[dict[str, Any]]) -> list[tuple[float | None, float | None]]:
    """(median_us, pct_of_sol) of an entry on each shape; None where it has no timing there."""
    found = {full_shape(c.case): c for c in entry.result.cases if c.kind == "benchmark"}
    values = []
    for shape in shapes:
        case = found.get(full_shape(shape))
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
    if entry.rank is not None:
        record["rank"] = entry.rank
    if entry.note:
        record["note"] = entry.note
    if entry.score_us is not None:
        record["score_us"] = entry.score_us
        record["geomean_pct_of_sol"] = result.geomean_pct_of_sol
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
        "hidden_runs": board.hidden_runs,
    }


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
                fmt_us(entry.score_us), fmt_pct(entry.result.geomean_pct_of_sol), *medians,
                fmt_time(entry.stored.recorded_at)]

    lines += ["## Ranking", ""]
    if board.ranking:
        lines += _md_table(["#", "author", "submission", "geomean (µs)", "% of SOL", *shape_cols, "run at (UTC)"],
                           [timed_row(e, str(e.rank)) for e in board.ranking])
    else:
        lines.append("No rankable run yet.")
    if shapes:
        lines += ["", "Shapes: " + "; ".join(f"{i + 1} = {full_shape(s)}" for i, s in enumerate(shapes)) + "."]
    if board.others:
        lines += ["", "## Other entries", "", "Rankable files that are not their author's best.", ""]
        lines += _md_table(["", "author", "submission", "geomean (µs)", "% of SOL", *shape_cols, "run at (UTC)"],
                           [timed_row(e, NONE) for e in board.others])
    if board.not_rankable:
        lines += ["", "## Not rankable", ""]
        lines += _md_table(["submission", "author", "geomean (µs)", "note"],
                           [[file_name(e, p), e.stored.author, fmt_us(e.score_us), e.note] for e in board.not_rankable])
    if board.failed:
        lines += ["", "## Failed", ""]
        lines += _md_table(["submission", "author", "status", "reason"],
                           [[file_name(e, p), e.stored.author, status_label(e.result), e.result.reason or NONE]
                            for e in board.failed])
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


def render_chart(board: Board) -> str:
    """Grouped bars: one group per benchmark shape, one bar per submission (% of SOL, else µs)."""
    entries = board.charted[:MAX_CHARTED]
    shapes = benchmark_shapes(entries)
    if not entries or not shapes:
        return '<p class="empty">No rankable run to chart yet.</p>'
    values = {id(e): per_shape(e, shapes) for e in entries}
    use_sol = any(pct is not None for vals in values.values() for _, pct in vals)
    axis = "% of speed of light (higher is better)" if use_sol else "median time, µs (lower is better)"

    def metric(pair: tuple[float | None, float | None]) -> float | None:
        return pair[1] if use_sol else pair[0]

    top = nice_ceiling(max((metric(v) or 0.0) for vals in values.values() for v in vals))
    width, left, right, top_pad, plot_h = 1100, 70, 20, 24, 300
    legend_cols = 3
    legend_rows = math.ceil(len(entries) / legend_cols)
    height = top_pad + plot_h + 64 + 26 * legend_rows + 12
    plot_w = width - left - right
    group_w = plot_w / len(shapes)
    bar_w = min(56.0, group_w * 0.8 / len(entries))
    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
           f'xmlns="http://www.w3.org/2000/svg" aria-label="{html.escape(axis)} per submission and shape">',
           f'<text class="axis-title" x="16" y="{top_pad + plot_h / 2}" '
           f'transform="rotate(-90 16 {top_pad + plot_h / 2})" text-anchor="middle">{html.escape(axis)}</text>']
    for step in range(6):
        value = top * step / 5
        y = top_pad + plot_h - plot_h * step / 5
        out.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        label = f"{value:g}%" if use_sol else f"{value:g}"
        out.append(f'<text class="tick" x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    for g, shape in enumerate(shapes):
        x0 = left + g * group_w + (group_w - bar_w * len(entries)) / 2
        for b, entry in enumerate(entries):
            median, pct = values[id(entry)][g]
            value = metric((median, pct))
            if value is None:
                continue
            h = plot_h * min(value, top) / top
            x, y = x0 + b * bar_w, top_pad + plot_h - h
            tip = (f"{entry.stored.author} · {file_name(entry, board.problem)} · {full_shape(shape)}: "
                   f"{fmt_us(median)} µs" + (f", {fmt_pct(pct)} of SOL" if pct is not None else ""))
            other = " other" if entry.rank is None else ""
            out.append(f'<rect class="bar{other}" x="{x + 1:.1f}" y="{y:.1f}" width="{max(bar_w - 2, 1):.1f}" '
                       f'height="{h:.1f}" rx="2" fill="{PALETTE[b]}"><title>{html.escape(tip)}</title></rect>')
            if bar_w >= 30:
                text = f"{value:.0f}%" if use_sol else fmt_us(value)
                out.append(f'<text class="value" x="{x + bar_w / 2:.1f}" y="{y - 5:.1f}" '
                           f'text-anchor="middle">{text}</text>')
        cx = left + (g + 0.5) * group_w
        out.append(f'<text class="group" x="{cx:.1f}" y="{top_pad + plot_h + 22}" text-anchor="middle">'
                   f'shape {g + 1}</text>')
        out.append(f'<text class="shape" x="{cx:.1f}" y="{top_pad + plot_h + 40}" text-anchor="middle">'
                   f'<title>{html.escape(full_shape(shape))}</title>{html.escape(shape_label(shape))}</text>')
    out.append(f'<line class="baseline" x1="{left}" x2="{width - right}" y1="{top_pad + plot_h}" '
               f'y2="{top_pad + plot_h}"/>')
    legend_y = top_pad + plot_h + 70
    column_w = plot_w / legend_cols
    for b, entry in enumerate(entries):
        x = left + (b % legend_cols) * column_w
        y = legend_y + (b // legend_cols) * 26
        label = f"{entry.stored.author} · {file_name(entry, board.problem)}"
        label = one_line(f"#{entry.rank} {label}" if entry.rank is not None else f"{label} (other)", 48)
        other = " other" if entry.rank is None else ""
        out.append(f'<rect class="swatch{other}" x="{x:.1f}" y="{y - 12}" width="14" height="14" rx="3" '
                   f'fill="{PALETTE[b]}"/>')
        out.append(f'<text class="legend" x="{x + 22:.1f}" y="{y}">{html.escape(label)}</text>')
    out.append("</svg>")
    if len(board.charted) > MAX_CHARTED:
        out.append(f'<p class="note">The first {MAX_CHARTED} of {len(board.charted)} rankable files are charted.</p>')
    return "\n".join(out)


# -- HTML ------------------------------------------------------------------------------------
STYLE = """
:root { --ink: #0f172a; --muted: #64748b; --line: #e2e8f0; --bg: #f8fafc; --card: #ffffff;
        --accent: #2563eb; --bad: #b91c1c; --warn: #a16207; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1160px; margin: 0 auto; padding: 28px 24px 40px; }
header h1 { margin: 0 0 4px; font-size: 28px; letter-spacing: -0.01em; }
header .meta { margin: 0; color: var(--muted); }
header .meta strong { color: var(--ink); }
.crumb { margin: 0 0 8px; font-size: 13px; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
          padding: 18px 20px; margin-top: 20px; }
h2 { margin: 0 0 12px; font-size: 18px; }
h2 small { font-weight: normal; color: var(--muted); font-size: 14px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { padding: 7px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 13px; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #f8fafc; }
td.when { white-space: nowrap; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--muted); }
.rank { display: inline-block; min-width: 28px; padding: 1px 8px; border-radius: 999px; text-align: center;
        font-weight: 700; background: #e2e8f0; }
.rank.r1 { background: #fde68a; } .rank.r2 { background: #e5e7eb; } .rank.r3 { background: #fed7aa; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 3px; margin-right: 6px; }
.status { font-weight: 600; } .status.bad { color: var(--bad); } .status.warn { color: var(--warn); }
.reason { color: #334155; }
.empty, .note, footer { color: var(--muted); }
footer { margin-top: 24px; font-size: 13px; }
svg.chart { display: block; font-family: inherit; }
svg .other { fill-opacity: 0.55; }
svg .grid { stroke: var(--line); } svg .baseline { stroke: #94a3b8; }
svg .tick, svg .shape { fill: var(--muted); font-size: 12px; }
svg .group { fill: var(--ink); font-size: 13px; font-weight: 600; }
svg .value { fill: #334155; font-size: 11px; font-weight: 600; }
svg .legend { fill: var(--ink); font-size: 13px; }
svg .axis-title { fill: var(--muted); font-size: 12px; }
"""


def _page(title: str, body: list[str]) -> str:
    return "\n".join([
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>", "<main>",
        *body, "</main>", "</body>", "</html>", "",
    ])


def _e(text: object) -> str:
    return html.escape(str(text))


def _submission_cell(entry: Entry, problem: str, colour: str | None) -> str:
    faded = ";opacity:0.55" if entry.rank is None else ""  # as the chart draws authors' other files
    dot = f'<span class="dot" style="background:{colour}{faded}"></span>' if colour else ""
    return f"<td>{dot}{_e(file_name(entry, problem))} <code>{_e(entry.stored.sha256[:8])}</code></td>"


def _timed_table(board: Board, entries: list[Entry], shapes: list[dict[str, Any]], ranked: bool) -> str:
    colours = {id(e): PALETTE[i] for i, e in enumerate(board.charted[:MAX_CHARTED])}
    head = ["<th>#</th>" if ranked else "", "<th>author</th>", "<th>submission</th>",
            '<th class="num">geomean µs</th>', '<th class="num">% of SOL</th>',
            *(f'<th class="num" title="{_e(full_shape(s))}">shape {i + 1} µs</th>' for i, s in enumerate(shapes)),
            "<th>run at (UTC)</th>"]
    rows = []
    for entry in entries:
        rank = (f'<td><span class="rank r{entry.rank}">{entry.rank}</span></td>' if ranked else "")
        medians = "".join(f'<td class="num">{fmt_us(m)}</td>' for m, _ in per_shape(entry, shapes))
        rows.append(f"<tr>{rank}<td>{_e(entry.stored.author)}</td>"
                    f"{_submission_cell(entry, board.problem, colours.get(id(entry)))}"
                    f'<td class="num"><strong>{fmt_us(entry.score_us)}</strong></td>'
                    f'<td class="num">{fmt_pct(entry.result.geomean_pct_of_sol)}</td>{medians}'
                    f'<td class="when">{_e(fmt_time(entry.stored.recorded_at))}</td></tr>')
    return f"<table><thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _listed_table(board: Board, entries: list[Entry], failed: bool) -> str:
    rows = []
    for entry in entries:
        status = status_label(entry.result) if failed else "passed"
        text = entry.result.reason if failed else entry.note
        rows.append(f"<tr>{_submission_cell(entry, board.problem, None)}<td>{_e(entry.stored.author)}</td>"
                    f'<td><span class="status {"bad" if failed else "warn"}">{_e(status)}</span></td>'
                    f'<td class="reason">{_e(one_line(text or NONE, 300))}</td></tr>')
    head = "<th>submission</th><th>author</th><th>status</th><th>" + ("reason" if failed else "note") + "</th>"
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(board: Board, generated_at: str) -> str:
    shapes = benchmark_shapes(board.charted)
    body = [
        "<header>", '<p class="crumb"><a href="../index.html">← all problems</a></p>',
        f"<h1>{_e(board.problem)} leaderboard</h1>",
        f'<p class="meta"><strong>{_e(board.device_name or "?")}</strong> · harness {_e(board.harness_version)} '
        f"· updated {_e(fmt_time(board.updated_at))} UTC</p>", "</header>",
        "<section>", "<h2>Speed of light per benchmark shape</h2>", render_chart(board), "</section>",
        "<section>", f"<h2>Ranking <small>· {_e(SCORE_RULE)}</small></h2>",
        _timed_table(board, board.ranking, shapes, True) if board.ranking
        else '<p class="empty">No rankable run yet.</p>',
    ]
    if shapes:
        body.append('<p class="note">' + " · ".join(f"shape {i + 1}: {_e(full_shape(s))}"
                                                    for i, s in enumerate(shapes)) + "</p>")
    body.append("</section>")
    if board.others:
        body += ["<section>", "<h2>Other entries <small>· rankable files that are not their author's best</small></h2>",
                 _timed_table(board, board.others, shapes, False), "</section>"]
    if board.not_rankable:
        body += ["<section>", "<h2>Not rankable</h2>", _listed_table(board, board.not_rankable, False), "</section>"]
    if board.failed:
        body += ["<section>", "<h2>Failed <small>· never ranked</small></h2>",
                 _listed_table(board, board.failed, True), "</section>"]
    hidden = f" {board.hidden_runs} run(s) from other devices or harness versions are not shown." if (
        board.hidden_runs) else ""
    body.append(f'<footer>Generated {_e(generated_at)} · <a href="LEADERBOARD.md">LEADERBOARD.md</a> · '
                f'<a href="leaderboard.json">leaderboard.json</a>.{_e(hidden)}</footer>')
    return _page(f"{board.problem} leaderboard", body)


def render_index(boards: Sequence[Board], generated_at: str) -> str:
    rows = []
    for board in boards:
        leader = board.ranking[0] if board.ranking else None
        best = (f"{_e(leader.stored.author)} · {fmt_us(leader.score_us)} µs" if leader else NONE)
        rows.append(f'<tr><td><a href="{_e(board.problem)}/index.html">{_e(board.problem)}</a></td>'
                    f"<td>{_e(board.device_name or '?')}</td><td>{best}</td>"
                    f'<td class="num">{len(board.ranking)}</td><td class="num">{len(board.failed)}</td>'
                    f'<td class="when">{_e(fmt_time(board.updated_at))}</td></tr>')
    table = ("<table><thead><tr><th>problem</th><th>device</th><th>leader</th><th class=\"num\">ranked</th>"
             f"<th class=\"num\">failed</th><th>updated</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    body = ["<header>", "<h1>NVFP4 leaderboards</h1>", f'<p class="meta">generated {_e(generated_at)}</p>',
            "</header>", "<section>", table if rows else '<p class="empty">No runs stored yet.</p>', "</section>"]
    return _page("NVFP4 leaderboards", body)


def write_site(boards: Sequence[Board], out: Path, generated_at: str) -> list[Path]:
    """Write <problem>/{LEADERBOARD.md,index.html,leaderboard.json} per board and index.html."""
    written = []
    for board in boards:
        directory = out / board.problem
        directory.mkdir(parents=True, exist_ok=True)
        files = {
            "LEADERBOARD.md": render_markdown(board, generated_at),
            "index.html": render_html(board, generated_at),
            "leaderboard.json": json.dumps(board_json(board, generated_at), indent=2) + "\n",
        }
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8")
            written.append(directory / name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.html").write_text(render_index(boards, generated_at), encoding="utf-8")
    written.append(out / "index.html")
    return written
