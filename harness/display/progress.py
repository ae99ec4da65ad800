"""What a long run shows while it works: a live display on a terminal, plain lines elsewhere.

On a terminal (a person waiting) rich draws one bar: what runs now, done/total, elapsed and
time left (elapsed alone until the first item has finished: before that no estimate exists), with
each finished item printed above it. Without a terminal (CI logs, a file, the service) the same
events are plain lines, one per event, as greppable as before. ``detail`` lines (the sandbox, the
import time) are an organizer's diagnostics: shown only when the display was made ``verbose``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Protocol, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text


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

    def detail(self, line: str) -> None:
        """A diagnostic line (sandbox, import time): printed only by a verbose display."""
        ...

    def close(self) -> None: ...


class LineProgress:
    """Every event that carries text becomes one line through ``emit`` (details only when ``verbose``)."""

    def __init__(self, emit: Callable[[str], None], verbose: bool = False) -> None:
        self._emit = emit
        self._verbose = verbose

    def begin(self, total: int, title: str) -> None:
        pass

    def working(self, label: str) -> None:
        pass

    def step(self, line: str) -> None:
        self._emit(line)

    def note(self, line: str) -> None:
        self._emit(line)

    def detail(self, line: str) -> None:
        if self._verbose:
            self._emit(line)

    def close(self) -> None:
        pass


class TimeLeftColumn(ProgressColumn):
    """'0:00:12 left' once rich can estimate it; nothing before (not '-:--:--')."""

    def __init__(self) -> None:
        super().__init__()
        self._remaining = TimeRemainingColumn()

    def render(self, task: Task) -> Text:
        if task.time_remaining is None or task.finished:
            return Text("")
        left = self._remaining.render(task)
        left.append(" left")
        return left


class LiveProgress:
    """A rich progress bar on ``stream``; finished items print above it."""

    def __init__(self, stream: TextIO, verbose: bool = False) -> None:
        self._console = Console(file=stream)
        self._verbose = verbose
        self._bar = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), TimeLeftColumn(),
                                 console=self._console, transient=True)
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

    def detail(self, line: str) -> None:
        if self._verbose:
            self.note(line)

    def close(self) -> None:
        if self._task is not None:
            self._bar.stop()
            self._task = None


def for_stream(stream: TextIO = sys.stderr, verbose: bool = False) -> Progress:
    """A live display when ``stream`` is a terminal, else plain lines on it; ``verbose``: details too."""
    if stream.isatty():
        return LiveProgress(stream, verbose)
    return LineProgress(lambda line: print(line, file=stream, flush=True), verbose)


def as_progress(progress: Progress | Callable[[str], None] | None) -> Progress:
    """Accept a Progress, a plain line callback (the leaderboard's, the cluster's) or nothing."""
    if progress is None:
        return LineProgress(lambda line: None)
    if callable(progress) and not hasattr(progress, "step"):
        return LineProgress(progress, verbose=True)  # an organizer's log (leaderboard, cluster) keeps the details
    return progress  # type: ignore[return-value]
