"""Tables a person reads, laid out by rich and returned as plain text.

Plain text (no colour codes, no width limit) reads the same on a terminal, in a CI log, a file or
a service response; rich does the alignment that was padded by hand before.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table


def text_table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None,
               indent: int = 0, right: Sequence[int] | None = None) -> list[str]:
    """Lines of a table; the columns numbered in ``right`` are right-aligned (numbers), by default
    every column but the first (a name or shape, then numbers)."""
    right = range(1, len(columns)) if right is None else right
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="", title=title,
                  title_justify="left", title_style="")
    for index, name in enumerate(columns):
        table.add_column(name, justify="right" if index in right else "left", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    console = Console(file=io.StringIO(), width=100_000, color_system=None, force_terminal=False,
                      legacy_windows=False, emoji=False, highlight=False, markup=False)
    console.print(table)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    return [" " * indent + line.rstrip() for line in text.splitlines() if line.strip()]
