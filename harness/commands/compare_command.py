"""``python -m harness compare A B``: two runs side by side per shape (median, spread, % of SOL, change).

A and B are history ids (``python -m harness history``) or result files written by ``eval --json``.
A change is "within noise" when the two p10-p90 spreads overlap; CPU wall-clock times get no % of
speed of light; runs that cannot be compared (another problem or device, a failed or untimed run)
are shown with one note saying why.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.contract.results import CaseResult, ExitCode, RunResult, TimingStats
from harness.contract.task_spec import shape_text
from harness.display.report import STATUS_WORDS
from harness.display.tables import text_table
from harness.history.run_history import History, comparable
from harness.sqlite_migrations import StoreError


def load_run(ref: str) -> tuple[str, RunResult]:
    """(label, result) of a history id or an `eval --json` file; ValueError/StoreError saying why not."""
    if ref.isdigit():
        with History.open() as history:
            return f"run {ref}", history.result(int(ref))
    path = Path(ref)
    try:
        return path.name, RunResult.from_json(json.loads(path.read_text()))
    except OSError as error:
        raise ValueError(f"{ref}: neither a history id nor a readable result file ({error.strerror})") from None
    except (ValueError, TypeError, KeyError) as error:
        raise ValueError(f"{ref}: not a result written by `eval --json` ({error})") from None


def _wall_clock(run: RunResult) -> bool:
    """A CPU run's times are wall clock: never shown as % of speed of light."""
    return run.device.get("type") == "cpu"


def _cells(case: CaseResult | None, with_sol: bool) -> list[str]:
    width = 3 if with_sol else 2
    if case is None:
        return ["-"] * width
    if case.timing is None:
        return [STATUS_WORDS[case.status]] + ["-"] * (width - 1)
    t = case.timing
    cells = [f"{t.median_us:.2f}", f"{t.p10_us:.2f}-{t.p90_us:.2f}"]
    return cells + ([f"{case.pct_of_sol:.1f}" if case.pct_of_sol else "-"] if with_sol else [])


def overlaps(old: TimingStats, new: TimingStats) -> bool:
    """Whether two runs' p10-p90 spreads overlap: their medians then differ by less than their noise."""
    return old.p10_us <= new.p90_us and new.p10_us <= old.p90_us


def _change(old: CaseResult | None, new: CaseResult | None) -> str:
    """B against A in percent of A's median (negative is faster), or 'within noise' when the spreads overlap."""
    if not (old and new and old.timing and new.timing and old.timing.median_us):
        return "-"
    if overlaps(old.timing, new.timing):
        return "within noise"
    return f"{100.0 * (new.timing.median_us - old.timing.median_us) / old.timing.median_us:+.1f}%"


def comparison_rows(a: RunResult, b: RunResult) -> list[list[str]]:
    """One row per (kind, shape) of either run, timed shapes first, then the geometric means: median,
    p10-p90 spread (and % SOL unless a run is CPU wall clock) of each, and the change."""
    def by_shape(run: RunResult) -> dict[tuple[str, str], CaseResult]:
        return {(c.kind, shape_text(c.case)): c for c in run.cases}

    with_sol = not (_wall_clock(a) or _wall_clock(b))
    left, right = by_shape(a), by_shape(b)
    keys = sorted(dict.fromkeys([*left, *right]), key=lambda k: k[0] != "benchmark")
    rows = []
    changes = []
    for key in keys:
        old, new = left.get(key), right.get(key)
        changes.append(_change(old, new))
        rows.append([f"{key[0]} {key[1]}", *_cells(old, with_sol), *_cells(new, with_sol), changes[-1]])
    if a.geomean_us or b.geomean_us:
        def geo(run: RunResult) -> list[str]:
            pct = [f"{run.geomean_pct_of_sol:.1f}" if run.geomean_pct_of_sol else "-"] if with_sol else []
            return [f"{run.geomean_us:.2f}", "", *pct] if run.geomean_us else ["-", "", *(["-"] if with_sol else [])]
        timed = [c for c in changes if c != "-"]
        change = "-" if not (a.geomean_us and b.geomean_us) else (
            "within noise" if timed and all(c == "within noise" for c in timed)
            else f"{100.0 * (b.geomean_us - a.geomean_us) / a.geomean_us:+.1f}%")
        rows.append(["geometric mean", *geo(a), *geo(b), change])
    return rows


def _describe(label: str, run: RunResult) -> str:
    device = run.device.get("name", run.device.get("type", "?"))
    return f"{label}: {run.submission_path} ({run.problem}, {run.mode} mode, {device}, {run.started_at}): " \
           f"{run.status.value}"


def _handle(args: argparse.Namespace) -> int:
    try:
        (label_a, a), (label_b, b) = load_run(args.a), load_run(args.b)
    except (ValueError, StoreError) as error:
        print(f"compare: error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    print(f"A = {_describe(label_a, a)}")
    print(f"B = {_describe(label_b, b)}")
    why_not = comparable(a, b)
    if why_not:
        print(f"note: not comparable: {why_not}")
    with_sol = not (_wall_clock(a) or _wall_clock(b))
    columns = ["shape", "A median us", "A p10-p90", *(["A % SOL"] if with_sol else []),
               "B median us", "B p10-p90", *(["B % SOL"] if with_sol else []), "B vs A"]
    print("\n".join(["", *text_table(columns, comparison_rows(a, b))]))
    print("\nB vs A: the change of the median time (negative: B is faster); 'within noise' where the two "
          "p10-p90 spreads overlap")
    if not with_sol:
        print("CPU wall-clock times: no % of speed of light (it is a GPU's)")
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("compare", help="two runs side by side per shape (history ids or --json files)")
    parser.add_argument("a", help="a history id (python -m harness history) or an `eval --json` file")
    parser.add_argument("b", help="the same, for the run to compare with A")
    parser.set_defaults(handler=_handle)
