"""One SQLite connection shared by the web handlers and the dispatcher, behind one lock.

Why one connection and a lock: FastAPI runs handlers on a thread pool and the dispatcher has
its own thread; SQLite serialises writers anyway, and every statement here is short, so a lock
is simpler than a connection per thread and never sees "database is locked".
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from harness.leaderboard.store import SERVICE_VERSION_TABLE, Store, migrate
from harness.sqlite_migrations import StoreError, apply_migrations

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
"""The service's own tables (users, submissions), beside the leaderboard's runs they point at."""


class ServiceDb:
    """The store and the service's tables (each through its own migrations); use ``with db.locked() as
    store:`` around every access."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.store = Store(connection)
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | Path) -> ServiceDb:
        """Open (or create) the database, readable by its owner only: it holds every user's code."""
        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            os.chmod(path, 0o600)  # SQLite gives its -wal and -shm files the database's mode
            connection = sqlite3.connect(str(path), check_same_thread=False)
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA journal_mode = WAL")  # readers (user add) never block the service
            migrate(connection)  # the leaderboard's runs first: a submission points at its run
            apply_migrations(connection, MIGRATIONS_DIR, SERVICE_VERSION_TABLE)
        except (OSError, sqlite3.Error) as error:
            raise StoreError(f"{path}: cannot open the database ({error})") from None
        return cls(connection)

    @property
    def connection(self) -> sqlite3.Connection:
        return self.store.connection

    @property
    def lock(self) -> threading.Lock:
        return self._lock

    @contextmanager
    def locked(self) -> Iterator[Store]:
        with self._lock:
            yield self.store

    def close(self) -> None:
        with self._lock:
            self.store.close()


def claim(path: str | Path) -> IO[bytes]:
    """Hold ``<db>.lock`` for this process's life: one service per database.

    A second `harness serve` on the same file would re-queue the first one's running jobs and run
    them again beside it (two timings on one GPU). Raises StoreError (one line) when it is taken.
    """
    lock_path = Path(f"{path}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle = lock_path.open("ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StoreError(f"{path}: another harness serve is using this database; stop it first, or pass "
                         "another --db") from None
    return handle
