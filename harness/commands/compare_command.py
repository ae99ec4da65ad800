"""``python -m harness compare A B``: two runs side by side per shape (median, % of SOL, change).

A and B are history ids (``python -m harness history``) or result files written by ``eval --json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.contract.results import CaseResult, ExitCode, RunResult
from harness.contract.task_spec import shape_text
from harness.display.report import STATUS_WORDS
from harness.display.tables import text_table
from harness.history.run_history import History
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


def _cells(case: CaseResult | None) -> list[str]:
    if case is None:
        return ["-", "-"]
    if case.timing is None:
        return [STATUS_WORDS[case.status], "-"]
    return [f"{case.timing.median_us:.2f}", f"{case.pct_of_sol:.1f}" if case.pct_of_sol else "-"]


def _change(old: float | None, new: float | None) -> str:
    """B against A in percent of A's time: negative is faster."""
    return f"{100.0 * (new - old) / old:+.1f}%" if old and new else "-"


def comparison_rows(a: RunResult, b: RunResult) -> list[list[str]]:
    """One row per (kind, shape) of either run, timed shapes first, then the geometric means."""
    def by_shape(run: RunResult) -> dict[tuple[str, str], CaseResult]:
        return {(c.kind, shape_text(c.case)): c for c in run.cases}

    left, right = by_shape(a), by_shape(b)
    keys = sorted(dict.fromkeys([*left, *right]), key=lambda k: k[0] != "benchmark")
    rows = []
    for key in keys:
        old, new = left.get(key), right.get(key)
        times = [c.timing.median_us if c and c.timing else None for c in (old, new)]
        rows.append([f"{key[0]} {key[1]}", *_cells(old), *_cells(new), _change(*times)])
    if a.geomean_us or b.geomean_us:
        def geo(run: RunResult) -> list[str]:
            pct = f"{run.geomean_pct_of_sol:.1f}" if run.geomean_pct_of_sol else "-"
            return [f"{run.geomean_us:.2f}", pct] if run.geomean_us else ["-", "-"]
        rows.append(["geometric mean", *geo(a), *geo(b), _change(a.geomean_us, b.geomean_us)])
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
    if a.problem != b.problem:
        print(f"note: different problems ({a.problem}, {b.problem}): no shape lines up")
    columns = ["shape", "A median us", "A % SOL", "B median us", "B % SOL", "B vs A"]
    print("\n".join(["", *text_table(columns, comparison_rows(a, b))]))
    print("\nB vs A: the change of the median time (negative: B is faster)")
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("compare", help="two runs side by side per shape (history ids or --json files)")
    parser.add_argument("a", help="a history id (python -m harness history) or an `eval --json` file")
    parser.add_argument("b", help="the same, for the run to compare with A")
    parser.set_defaults(handler=_handle)
