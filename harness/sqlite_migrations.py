"""SQLite files that outlive harness versions: numbered migrations applied once, in order; UTC stamps.

Why migrations: a database (the leaderboard's, the service's queue, a contestant's history) outlives
the harness that made it, so its schema only ever moves forward by files applied in order, each
recorded in a version table; opening a database applies the ones it lacks and nothing else. Each
store keeps its own folder of ``NNNN_name.sql`` files and its own version table, so two stores may
share one file (the service's tables sit beside the leaderboard's runs).
"""

from __future__ import annotations

import datetime
import re
import sqlite3
from pathlib import Path

MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
VERSION_TABLE = "schema_version"
"""The default version table (the leaderboard's and the history's, as every database made before has it)."""


class StoreError(Exception):
    """The database or a migration file is unusable; the message names it."""


def utc_now() -> str:
    """Now, as every store records a time: UTC, ISO 8601, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def migration_files(directory: Path) -> list[tuple[int, str, Path]]:
    """(version, name, path) of every migration, in order; a gap or a duplicate is an error."""
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = MIGRATION_NAME.match(path.name)
        if not match:
            raise StoreError(f"{path}: migration files are named NNNN_name.sql (lower case)")
        found.append((int(match.group(1)), match.group(2), path))
    versions = [version for version, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise StoreError(f"{directory}: migrations must be numbered 1, 2, 3... without gaps, found {versions}")
    return found


def schema_version(connection: sqlite3.Connection, table: str = VERSION_TABLE) -> int:
    """The newest migration applied (0 for none)."""
    row = connection.execute(f"SELECT MAX(version) FROM {table}").fetchone()
    return int(row[0] or 0)


def sql_statements(script: str) -> list[str]:
    """A migration file's statements, one each.

    Why not executescript: it commits first, which would drop the write lock the migration
    holds. sqlite3.complete_statement keeps a ';' inside a string, comment or trigger body.
    """
    statements, buffer = [], ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\r\n;"):
                statements.append(buffer)
            buffer = ""
    if buffer.strip(" \t\r\n;"):
        statements.append(buffer)  # incomplete: let SQLite say what is wrong with it
    return statements


def create_version_table(connection: sqlite3.Connection, table: str = VERSION_TABLE) -> None:
    """The version table, created under the write lock (a file that is not a database fails here)."""
    if connection.in_transaction:
        connection.commit()
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute(
            f"CREATE TABLE IF NOT EXISTS {table} "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        connection.commit()
    except sqlite3.Error:
        connection.rollback()
        raise


def _apply(connection: sqlite3.Connection, version: int, name: str, path: Path, table: str) -> bool:
    """Apply one migration and its version row in one transaction; False when already there.

    Why the lock first: several processes may open a new database at once. Each takes the write
    lock (BEGIN IMMEDIATE) and only then reads the version, so a file is applied exactly once.
    """
    statements = sql_statements(path.read_text())
    try:
        connection.execute("BEGIN IMMEDIATE")
        if schema_version(connection, table) >= version:
            connection.rollback()
            return False
        for statement in statements:
            connection.execute(statement)
        connection.execute(f"INSERT INTO {table} VALUES (?, ?, ?)", (version, name, utc_now()))
        connection.commit()
    except sqlite3.Error as error:
        connection.rollback()
        raise StoreError(f"{path}: migration failed: {error}") from None
    return True


def apply_migrations(connection: sqlite3.Connection, directory: Path, table: str = VERSION_TABLE) -> list[int]:
    """Apply the migrations of ``directory`` newer than ``table`` says, each in its own transaction;
    return them."""
    files = migration_files(directory)
    create_version_table(connection, table)
    return [version for version, name, path in files if _apply(connection, version, name, path, table)]
