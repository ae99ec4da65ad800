"""What a long run shows while it works: a live display on a terminal, plain lines elsewhere.

On a terminal (a person waiting) rich draws one bar: what runs now, done/total, elapsed and
time left, with each finished item printed above it. Without a terminal (CI logs, a file, the
service) the same events are plain lines, one per event, as greppable as before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Protocol, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress


class Progress(Protocol):
    """The events a run reports; every method is cheap and never raises."""

    def begin(self, total: int, title: str) -> None: ...

    def working(self, label: str) -> None:
        """The item that runs now (shown on the live bar; plain output stays quiet)."""
        ...

    def step(self, line: str) -> None:
        """One item finished; ``line`` says which and how it went."""
        ...

    def note(self, line: str) -> None: ...

    def close(self) -> None: ...


class LineProgress:
    """Every event that carries text becomes one line through ``emit``."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit

    def begin(self, total: int, title: str) -> None:
        pass

    def working(self, label: str) -> None:
        pass

    def step(self, line: str) -> None:
        self._emit(line)

    def note(self, line: str) -> None:
        self._emit(line)

    def close(self) -> None:
        pass


class LiveProgress:
    """A rich progress bar on ``stream``; finished items print above it."""

    def __init__(self, stream: TextIO) -> None:
        self._console = Console(file=stream)
        self._bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("left"),
                                 TimeRemainingColumn(), console=self._console, transient=True)
        self._task: int | None = None
        self._title = ""

    def begin(self, total: int, title: str) -> None:
        self._title = title
        if self._task is None:
            self._bar.start()
            self._task = self._bar.add_task(title, total=total)
        else:
            self._bar.update(self._task, total=total, completed=0, description=title)

    def working(self, label: str) -> None:
        if self._task is not None:
            self._bar.update(self._task, description=f"{self._title}: {label}")

    def step(self, line: str) -> None:
        self._console.print(line, markup=False, highlight=False)
        if self._task is not None:
            self._bar.advance(self._task)

    def note(self, line: str) -> None:
        self._console.print(line, markup=False, highlight=False)

    def close(self) -> None:
        if self._task is not None:
            self._bar.stop()
            self._task = None


def for_stream(stream: TextIO = sys.stderr) -> Progress:
    """A live display when ``stream`` is a terminal, else plain lines on it."""
    if stream.isatty():
        return LiveProgress(stream)
    return LineProgress(lambda line: print(line, file=stream, flush=True))


def as_progress(progress: Progress | Callable[[str], None] | None) -> Progress:
    """Accept a Progress, a plain line callback (the leaderboard's, the cluster's) or nothing."""
    if progress is None:
        return LineProgress(lambda line: None)
    if callable(progress) and not hasattr(progress, "step"):
        return LineProgress(progress)
    return progress  # type: ignore[return-value]
