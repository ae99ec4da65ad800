"""The per-user history of `eval` results: a small SQLite file with numbered migrations.

Where it lives: ``$NVFP4_HISTORY_DB`` when set (tests, a shared folder), else ``history.db`` in the
platform's user data folder (platformdirs: ~/.local/share/nvfp4-harness on Linux,
~/Library/Application Support/nvfp4-harness on macOS), so runs from any checkout land in one place.
Its schema moves forward by this package's migrations/ (harness.sqlite_migrations).
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from harness.contract.results import RunResult, Status
from harness.sqlite_migrations import StoreError, apply_migrations, utc_now

HISTORY_ENV = "NVFP4_HISTORY_DB"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
APP_NAME = "nvfp4-harness"


def default_path() -> Path:
    """``$NVFP4_HISTORY_DB``, else history.db in this user's data folder."""
    override = os.environ.get(HISTORY_ENV)
    if override:
        return Path(override)
    import platformdirs  # here, not at the top: an eval on an image without it still runs (and says so)

    return Path(platformdirs.user_data_dir(APP_NAME)) / "history.db"


def _device_name(run: RunResult) -> str:
    return str((run.device or {}).get("name") or (run.device or {}).get("type") or "?")


def comparable(a: RunResult, b: RunResult) -> str | None:
    """Why the two runs' times cannot be compared, or None: the same problem on the same kind of
    device, both passed and both timed (a hang against a mismatch has no time to compare)."""
    device = [_device_name(run) for run in (a, b)]
    if a.problem != b.problem:
        return f"different problems ({a.problem}, {b.problem}): no shape lines up"
    if device[0] != device[1]:
        return f"different devices ({device[0]}, {device[1]}): their times do not compare"
    failed = [f"{name} {run.status.value}" for name, run in (("A", a), ("B", b)) if run.status != Status.PASSED]
    if failed:
        return f"{' and '.join(failed)}: only two passed runs compare"
    untimed = [name for name, run in (("A", a), ("B", b)) if not run.geomean_us]
    if untimed:
        return f"{' and '.join(untimed)} timed nothing (a test-mode or CPU correctness run)"
    return None


@dataclass(frozen=True)
class HistoryEntry:
    """One kept run, as `history` lists it."""

    id: int
    recorded_at: str
    problem: str
    submission_path: str
    mode: str
    device_name: str
    status: str
    geomean_us: float | None
    geomean_pct_of_sol: float | None


_LISTED = "id, recorded_at, problem, submission_path, mode, device_name, status, geomean_us, geomean_pct_of_sol"


class History:
    """Runs in, runs out; use as a context manager."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.connection = connection
        self.path = path

    @classmethod
    def open(cls, path: Path | None = None) -> History:
        path = path or default_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(str(path))
            apply_migrations(connection, MIGRATIONS_DIR)
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"{path}: cannot open the history ({error}); set ${HISTORY_ENV} to another file") from None
        return cls(connection, path)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, run: RunResult) -> int:
        """Keep one run; returns its id."""
        device = _device_name(run)
        with self.connection:
            cursor = self.connection.execute(
                "INSERT INTO runs (recorded_at, problem, submission_path, sha256, mode, device_name, status, "
                "geomean_us, geomean_pct_of_sol, result_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (utc_now(), run.problem, run.submission_path, run.submission_sha256, run.mode, device,
                 run.status.value, run.geomean_us, run.geomean_pct_of_sol, json.dumps(run.to_json())),
            )
        return int(cursor.lastrowid)

    def entries(self, problem: str | None = None, limit: int = 50) -> list[HistoryEntry]:
        """The latest ``limit`` runs (of one problem), oldest first."""
        where, params = ("WHERE problem = ?", (problem,)) if problem else ("", ())
        rows = self.connection.execute(f"SELECT {_LISTED} FROM runs {where} ORDER BY id DESC LIMIT ?",
                                       (*params, limit)).fetchall()
        return [HistoryEntry(*row) for row in reversed(rows)]

    def previous(self, run_id: int, run: RunResult) -> int | None:
        """The latest run kept before ``run_id`` that ``run`` compares with (``comparable``: the same
        problem, mode and device, passed and timed), if any."""
        row = self.connection.execute(
            "SELECT MAX(id) FROM runs WHERE id < ? AND problem = ? AND mode = ? AND device_name = ? AND status = ? "
            "AND geomean_us IS NOT NULL", (run_id, run.problem, run.mode, _device_name(run), Status.PASSED.value),
        ).fetchone()
        if not row or row[0] is None or comparable(self.result(int(row[0])), run):
            return None
        return int(row[0])

    def result(self, run_id: int) -> RunResult:
        """The full result of run ``run_id``; StoreError when there is none."""
        row = self.connection.execute("SELECT result_json FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id} in the history {self.path} (python -m harness history lists them)")
        return RunResult.from_json(json.loads(row[0]))


def record(run: RunResult) -> str:
    """Keep ``run`` in this user's history; one line saying where, or why it was not kept (never raises)."""
    try:
        with History.open() as history:
            run_id = history.add(run)
            timed = run.status == Status.PASSED and run.geomean_us  # else nothing to compare with
            before = history.previous(run_id, run) if timed else None
    except StoreError as error:
        return f"note: not kept in the history: {error} (--no-history turns it off)"
    except ModuleNotFoundError as error:
        return f"note: not kept in the history: {error.name} is not installed (pip install {error.name}, or set " \
               f"${HISTORY_ENV} to a file)"
    compare = f"; python -m harness compare {before} {run_id} shows the change" if before else ""
    return f"kept as run {run_id} in the history (python -m harness history{compare})"
