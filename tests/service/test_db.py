"""The service's database: its own migrations beside the leaderboard's, and databases made before that."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from harness.leaderboard.store import MIGRATIONS_DIR as LEADERBOARD_MIGRATIONS
from harness.leaderboard.store import SERVICE_VERSION_TABLE
from harness.service.db import MIGRATIONS_DIR, ServiceDb
from harness.service.users import add_user, list_users
from harness.sqlite_migrations import apply_migrations, migration_files


def old_database(path: Path, tmp_path: Path, service_files: int) -> Path:
    """A database as harnesses made it before the service had migrations of its own: the service's
    files applied as the leaderboard's versions 3 and 4, recorded in one schema_version."""
    folder = tmp_path / "old_migrations"
    folder.mkdir()
    for *_, file in migration_files(LEADERBOARD_MIGRATIONS)[:2]:  # the leaderboard had two migrations then
        shutil.copy(file, folder / file.name)
    for version, name, file in migration_files(MIGRATIONS_DIR)[:service_files]:
        shutil.copy(file, folder / f"{version + 2:04d}_{name}.sql")
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA foreign_keys = ON")
    assert apply_migrations(connection, folder) == list(range(1, 3 + service_files))
    add_user(connection, "ada")
    connection.close()
    return path


LEADERBOARD_VERSIONS = [(version, name) for version, name, _ in migration_files(LEADERBOARD_MIGRATIONS)]


def versions(path: Path, table: str) -> list[tuple[int, str]]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(f"SELECT version, name FROM {table} ORDER BY version").fetchall()
    finally:
        connection.close()


def test_a_new_database_gets_each_side_its_own_migrations(tmp_path):
    db = ServiceDb.open(tmp_path / "service.db")
    db.close()
    assert versions(tmp_path / "service.db", "schema_version") == LEADERBOARD_VERSIONS
    assert versions(tmp_path / "service.db", SERVICE_VERSION_TABLE) == [(1, "service"), (2, "user_revocation")]


@pytest.mark.parametrize("service_files", [2, 1])
def test_an_existing_leaderboard_database_with_the_service_tables_keeps_working(tmp_path, service_files):
    """Its service rows (3, 4) move to the service's own table as 1, 2: nothing is applied twice, a
    missing one (revocation) is applied, and the leaderboard's next migration 3 is not taken for done."""
    path = old_database(tmp_path / "leaderboard.db", tmp_path, service_files)
    db = ServiceDb.open(path)
    try:
        with db.locked() as store:
            assert [user.name for user in list_users(store.connection)] == ["ada"]
    finally:
        db.close()
    assert versions(path, "schema_version") == LEADERBOARD_VERSIONS
    assert versions(path, SERVICE_VERSION_TABLE) == [(1, "service"), (2, "user_revocation")]
    ServiceDb.open(path).close()  # a second open changes nothing
    assert versions(path, SERVICE_VERSION_TABLE) == [(1, "service"), (2, "user_revocation")]
