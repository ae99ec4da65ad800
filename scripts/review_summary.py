"""Merge the review JSONs of scripts/review_check.sh's steps: one verdict per entry, every flag class, and
whether every cheat was flagged and no baseline (issue 39's "must show").

    python3 scripts/review_summary.py REVIEW.json... --baselines a.py,b.py --cheats c.py,d.py

A file's verdict is the worst any step gave it (reproduces not > look here > clean). Exit status 0 when
at least one cheat is on the board, every cheat on it is flagged and no baseline is.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

WORST_FIRST = ("reproduces not", "look here", "clean")


def merged(paths: list[Path]) -> dict[str, dict]:
    """Per file name: its worst verdict, its flags (class, where, evidence) and what was not run."""
    entries: dict[str, dict] = {}
    for path in paths:
        for entry in json.loads(path.read_text())["entries"]:
            name = Path(entry["submission"]).name
            seen = entries.setdefault(name, {"verdict": "clean", "flags": [], "not_run": set(), "rank": entry["rank"]})
            if WORST_FIRST.index(entry["verdict"]) < WORST_FIRST.index(seen["verdict"]):
                seen["verdict"] = entry["verdict"]
            for flag in entry["flags"]:
                where = f"{flag['file']}:{flag['line']}" if flag.get("line") else flag.get("file") or "-"
                item = (flag["class"], where, flag["evidence"])
                if item not in seen["flags"]:
                    seen["flags"].append(item)
            seen["not_run"] |= set(entry["not_run"])
    return entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reviews", nargs="+", type=Path)
    parser.add_argument("--baselines", default="", help="comma-separated file names of the honest entries")
    parser.add_argument("--cheats", default="", help="comma-separated file names of the cheats")
    args = parser.parse_args()
    baselines = {n for n in args.baselines.split(",") if n}
    cheats = {n for n in args.cheats.split(",") if n}
    entries = merged([p for p in args.reviews if p.is_file()])
    for name, entry in sorted(entries.items(), key=lambda item: (item[0] not in cheats, item[0])):
        kind = "cheat" if name in cheats else "baseline" if name in baselines else "other"
        classes = sorted({c for c, _, _ in entry["flags"]})
        print(f"{name:<36} {kind:<8} {entry['verdict']:<15} {', '.join(classes) or '-'}")
        for klass, where, evidence in entry["flags"]:
            print(f"    {klass:<16} {where:<40} {evidence}")
        for note in sorted(entry["not_run"]):
            print(f"    not run: {note}")
    flagged_cheats = sorted(n for n in cheats & set(entries) if entries[n]["verdict"] != "clean")
    flagged_baselines = sorted(n for n in baselines & set(entries) if entries[n]["verdict"] != "clean")
    print(f"cheats on the board: {len(cheats & set(entries))} of {len(cheats)}; flagged: {len(flagged_cheats)}"
          f" (not flagged: {', '.join(sorted(cheats & set(entries) - set(flagged_cheats))) or 'none'})")
    missing = ", ".join(sorted(cheats - set(entries))) or "none"
    print(f"not on the board (their ranked run failed, or below --top): {missing}")
    print(f"baselines reviewed: {len(baselines & set(entries))}; flagged: {', '.join(flagged_baselines) or 'none'}")
    on_board = cheats & set(entries)
    return 0 if on_board and not flagged_baselines and len(flagged_cheats) == len(on_board) else 1


if __name__ == "__main__":
    sys.exit(main())
