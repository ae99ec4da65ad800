"""The bytes a stored run was made from, and every local module they import (found, never executed).

Where the bytes are: the stored path (relative to the working directory, as the leaderboard
stores it) when the file there still has the stored sha256; else the service's ``submissions``
table, which keeps every upload. Local imports are resolved like the worker resolves them: the
submission's own folder first (the worker puts it on sys.path), then any extra folders the
organizer names (where the worker found helpers through PYTHONPATH); followed transitively.
A module found nowhere there (torch, triton, the contest's ``task``) is not local and not read.
"""

from __future__ import annotations

import ast
import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.contract import python_ast

MAX_FILES = 200
"""A source tree past this many local modules is cut there (the review says so)."""


class SourceMissing(Exception):
    """The reviewed bytes cannot be found; the message says where they were looked for."""


@dataclass(frozen=True)
class SourceFile:
    name: str  # as the review shows it: the stored path for the submission, folder-relative for helpers
    data: bytes
    path: Path | None  # None for bytes read from the database

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _from_service(connection: sqlite3.Connection, sha256: str) -> bytes | None:
    try:
        row = connection.execute("SELECT source FROM submissions WHERE sha256 = ? ORDER BY id DESC LIMIT 1",
                                 (sha256,)).fetchone()
    except sqlite3.Error:  # a database without the service's tables
        return None
    return bytes(row[0]) if row else None


def submission_source(submission_path: str, sha256: str, connection: sqlite3.Connection) -> SourceFile:
    """The stored run's own file: on disk with the stored sha256, else the service's copy."""
    path = Path(submission_path)
    changed = ""
    if path.is_file():
        data = path.read_bytes()
        if _sha256(data) == sha256:
            return SourceFile(submission_path, data, path.resolve())
        changed = f"{submission_path} has changed since the run (sha256 {_sha256(data)[:12]}, stored {sha256[:12]})"
    data = _from_service(connection, sha256)
    if data is not None:
        return SourceFile(submission_path, data, None)
    raise SourceMissing((changed or f"{submission_path} is not there (run the review from where the leaderboard "
                         "ran)") + "; the service's table has no copy of those bytes either")


def _module_names(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """(dotted module name, level) of every import, and of __import__ / import_module with a constant."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            yield base, node.level
            for alias in node.names:
                yield (f"{base}.{alias.name}" if base else alias.name), node.level
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                yield node.args[0].value, 0


def _candidates(name: str, level: int, folder: Path, roots: Sequence[Path]) -> Iterator[Path]:
    """Files a module name may be: each package level's __init__.py and the module's own file."""
    bases = [folder.parents[level - 2] if level > 1 else folder] if level else list(roots)
    parts = [p for p in name.split(".") if p]
    for base in bases:
        for depth in range(1, len(parts) + 1):
            stem = base.joinpath(*parts[:depth])
            yield stem.with_suffix(".py")
            yield stem / "__init__.py"


def local_modules(main: SourceFile, roots: Sequence[Path]) -> tuple[list[SourceFile], list[str]]:
    """Every local module the submission imports, transitively; notes on what could not be read."""
    if main.path is None:
        return [], ["local imports not followed: the reviewed bytes came from the database, not a folder"]
    roots = [main.path.parent, *(Path(r).resolve() for r in roots)]
    seen, found, notes = {main.path}, [], []
    queue = [main]
    while queue:
        current = queue.pop(0)
        try:
            tree = python_ast.parse(current.text)
        except (SyntaxError, RecursionError, ValueError, MemoryError):
            continue  # the static read reports it
        folder = current.path.parent if current.path else roots[0]
        for name, level in _module_names(tree):
            for candidate in _candidates(name, level, folder, roots):
                candidate = candidate.resolve()
                if candidate in seen or not candidate.is_file():
                    continue
                if len(found) >= MAX_FILES:
                    notes.append(f"more than {MAX_FILES} local modules: the rest were not read")
                    return found, notes
                seen.add(candidate)
                shown = next((str(candidate.relative_to(r)) for r in sorted(roots, key=lambda r: -len(r.parts))
                              if candidate.is_relative_to(r)), str(candidate))  # below the nearest root
                module = SourceFile(shown, candidate.read_bytes(), candidate)
                found.append(module)
                queue.append(module)
    return found, notes
