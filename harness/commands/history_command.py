"""``python -m harness history [PROBLEM]``: the runs `eval` kept for this user, newest last."""

from __future__ import annotations

import argparse
import datetime
import sys

from harness.contract.results import ExitCode
from harness.display.tables import text_table
from harness.history.run_history import HISTORY_ENV, History, HistoryEntry, default_path
from harness.sqlite_migrations import StoreError


def _when(recorded_at: str) -> str:
    """A kept UTC time in this machine's local time, to the minute."""
    try:
        return datetime.datetime.fromisoformat(recorded_at).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return recorded_at


def history_rows(entries: list[HistoryEntry]) -> list[list[str]]:
    return [[str(e.id), _when(e.recorded_at), e.problem, e.submission_path, e.mode, e.device_name, e.status,
             f"{e.geomean_us:.2f} us" if e.geomean_us else "-",
             f"{e.geomean_pct_of_sol:.1f}%" if e.geomean_pct_of_sol else "-"] for e in entries]


def _handle(args: argparse.Namespace) -> int:
    try:
        with History.open() as history:
            entries = history.entries(args.problem, args.limit)
    except StoreError as error:
        print(f"history: error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    if not entries:
        print(f"no runs kept in {default_path()}" + (f" for {args.problem}" if args.problem else "")
              + ": every `python -m harness eval` adds one")
        return int(ExitCode.PASSED)
    columns = ["id", "when", "problem", "file", "mode", "device", "status", "geomean", "% SOL"]
    print("\n".join(text_table(columns, history_rows(entries), right=(0, 7, 8))))
    print(f"\n{len(entries)} run(s) from {default_path()}; python -m harness compare ID ID shows two side by side")
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("history", help="list the runs eval kept for you",
                                   description=f"The runs `eval` kept (${HISTORY_ENV} overrides where).")
    parser.add_argument("problem", nargs="?", help="only this problem's runs")
    parser.add_argument("--limit", type=int, default=50, help="at most this many, the latest (default 50)")
    parser.set_defaults(handler=_handle)
