"""The SQLite store: migrations applied once and in order, runs and cases round-trip, cache lookups."""

import multiprocessing
import sqlite3

import pytest

from harness import __version__
from harness.contract.results import RunResult
from harness.leaderboard.store import MIGRATIONS_DIR, Store
from harness.sqlite_migrations import StoreError, apply_migrations, migration_files, sql_statements

from .samples import B200, make_run, sha


def _add(store, run, name="a.py", device_name=B200, **extra):
    return store.add(run, problem=run.problem, submission_path=f"submissions/{run.problem}/{name}", sha256=sha(name),
                     author="ada", device_name=device_name, **extra)


def test_migrations_apply_once_and_record_their_version(tmp_path):
    latest = len(migration_files(MIGRATIONS_DIR))
    with Store.open(tmp_path / "lb.db") as store:
        assert store.version == latest >= 1
        _add(store, make_run())
    with Store.open(tmp_path / "lb.db") as store:  # a second open applies nothing and keeps the data
        assert store.version == latest
        assert len(store.runs()) == 1
        rows = store.connection.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    assert [v for v, _ in rows] == list(range(1, latest + 1))
    assert rows[0][1] == "initial"


def test_a_new_migration_file_is_applied_to_an_old_database(tmp_path):
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_first.sql").write_text("CREATE TABLE t (x INTEGER);")
    connection = sqlite3.connect(tmp_path / "db")
    assert apply_migrations(connection, folder) == [1]
    (folder / "0002_second.sql").write_text("ALTER TABLE t ADD COLUMN y TEXT;")
    assert apply_migrations(connection, folder) == [2]
    assert apply_migrations(connection, folder) == []
    assert [row[1] for row in connection.execute("PRAGMA table_info(t)")] == ["x", "y"]


def test_a_failing_migration_leaves_no_trace(tmp_path):
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_first.sql").write_text("CREATE TABLE t (x INTEGER);")
    (folder / "0002_broken.sql").write_text("CREATE TABLE u (x INTEGER);\nNOT SQL AT ALL;")
    connection = sqlite3.connect(tmp_path / "db")
    with pytest.raises(StoreError, match=r"0002_broken\.sql"):
        apply_migrations(connection, folder)
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "t" in tables and "u" not in tables
    assert connection.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == 1


def _open_at_once(path, barrier, results):
    """One of several processes opening the same new database at the same moment."""
    barrier.wait()
    try:
        with Store.open(path) as store:
            results.put(("ok", store.version))
    except Exception as error:  # the parent reports whatever went wrong
        results.put(("error", f"{type(error).__name__}: {error}"))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_processes_opening_a_new_database_at_once_all_succeed(tmp_path):
    """Each takes the write lock before reading the version, so no file is applied twice."""
    context, processes = multiprocessing.get_context("fork"), 6
    for attempt in range(10):
        path, barrier, results = tmp_path / f"lb{attempt}.db", context.Barrier(processes), context.Queue()
        workers = [context.Process(target=_open_at_once, args=(path, barrier, results)) for _ in range(processes)]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        assert outcomes == [("ok", len(migration_files(MIGRATIONS_DIR)))] * processes
        with Store.open(path) as store:
            rows = store.connection.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
        assert [v for (v,) in rows] == list(range(1, len(migration_files(MIGRATIONS_DIR)) + 1))


def test_migration_statements_split_where_sqlite_would():
    script = ("CREATE TABLE t (x TEXT DEFAULT 'a;b'); -- a comment; with a semicolon\n"
              "CREATE TRIGGER g AFTER INSERT ON t BEGIN UPDATE t SET x = 'c'; END;\n"
              "INSERT INTO t VALUES ('d')")
    statements = sql_statements(script)
    assert len(statements) == 3 and all(sqlite3.complete_statement(s) for s in statements)
    connection = sqlite3.connect(":memory:")
    for statement in statements:
        connection.execute(statement)
    assert connection.execute("SELECT x FROM t").fetchall() == [("c",)]


@pytest.mark.parametrize("names", [["0001_a.sql", "0003_c.sql"], ["0001_a.sql", "0001_b.sql"], ["1_a.sql"]])
def test_misnumbered_migrations_are_refused(tmp_path, names):
    for name in names:
        (tmp_path / name).write_text("SELECT 1;")
    with pytest.raises(StoreError):
        migration_files(tmp_path)


def test_a_file_that_is_not_a_database_is_one_clear_error(tmp_path):
    path = tmp_path / "lb.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a leaderboard database"):
        Store.open(path)


def test_run_and_cases_round_trip(tmp_path):
    run = make_run((20.0, 40.0, 10.0))
    with Store.open(tmp_path / "lb.db") as store:
        run_id = _add(store, run, recorded_at="2025-06-01T12:00:00+00:00")
        [back] = store.runs("nvfp4_gemv")
        assert back.id == run_id and back.author == "ada" and back.sha256 == sha("a.py")
        assert back.device_name == B200 and back.recorded_at == "2025-06-01T12:00:00+00:00"
        assert back.result == run  # the full RunResult, cases and timings included
        row = store.connection.execute(
            "SELECT status, mode, harness_version, rankable, geomean_us, sm_clock_mhz, mem_clock_mhz FROM runs"
        ).fetchone()
        assert row == ("passed", "leaderboard", __version__, 1, pytest.approx(20.0), 1965.0, 3996.0)
        cases = store.connection.execute(
            "SELECT kind, status, median_us, runs, method, sol_us, pct_of_sol FROM cases WHERE run_id = ? "
            "ORDER BY position", (run_id,)).fetchall()
    assert [c[0] for c in cases] == ["test", "benchmark", "benchmark", "benchmark"]
    assert cases[0][2] is None  # a test case has no timing
    assert cases[1][1:5] == ("passed", 20.0, 100, "cuda-event+queued-sleep")
    assert cases[1][6] == pytest.approx(100 * 8.622 / 20.0)
    with Store.open(tmp_path / "lb.db") as store:
        assert store.problems() == ["nvfp4_gemv"] and store.runs("nvfp4_gemm") == []


def test_cached_matches_file_device_and_version_only(tmp_path):
    with Store.open(tmp_path / "lb.db") as store:
        _add(store, make_run())
        key = {"problem": "nvfp4_gemv", "sha256": sha("a.py"), "device_name": B200, "harness_version": __version__}
        assert store.cached(**key) is not None
        assert store.cached(**{**key, "sha256": sha("b.py")}) is None
        assert store.cached(**{**key, "device_name": "NVIDIA H100 80GB HBM3"}) is None
        assert store.cached(**{**key, "harness_version": "0.0.1"}) is None
        assert store.cached(**{**key, "problem": "nvfp4_gemm"}) is None


def test_a_harness_error_is_stored_but_never_a_cache_hit(tmp_path):
    with Store.open(tmp_path / "lb.db") as store:
        _add(store, make_run(None, status=make_run().status.CRASHED, reason="evaluator raised"), harness_error=True)
        assert len(store.runs()) == 1
        assert store.cached(problem="nvfp4_gemv", sha256=sha("a.py"), device_name=B200,
                            harness_version=__version__) is None


def test_results_written_by_another_harness_version_still_load():
    record = make_run().to_json()
    record["field_from_the_future"] = 1
    record["cases"][1]["another_new_field"] = "x"
    record["cases"][1]["timing"]["p99_us"] = 3.0
    assert RunResult.from_json(record) == make_run()


def test_a_database_made_with_the_service_tables_still_takes_the_leaderboards_next_migration(tmp_path):
    """Before the service had its own migrations, its tables were this store's versions 3 and 4: the
    store hands those rows over to the service's version table, so its own version 3 still applies."""
    from harness.leaderboard.store import SERVICE_VERSION_TABLE
    from harness.service.db import MIGRATIONS_DIR as SERVICE_MIGRATIONS

    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        folder.mkdir()
        for version, _, path in migration_files(MIGRATIONS_DIR):
            if version <= 2:  # the store's migrations from before the service had its own
                (folder / path.name).write_text(path.read_text())
    for version, name, path in migration_files(SERVICE_MIGRATIONS):
        (old / f"{version + 2:04d}_{name}.sql").write_text(path.read_text())
    (new / "0003_next.sql").write_text("CREATE TABLE next_thing (x INTEGER);")
    connection = sqlite3.connect(tmp_path / "lb.db")
    assert apply_migrations(connection, old) == [1, 2, 3, 4]
    connection.close()
    with Store.open(tmp_path / "lb.db", new) as store:
        assert store.version == 3
        assert store.connection.execute("SELECT COUNT(*) FROM next_thing").fetchone() == (0,)
        handed = store.connection.execute(f"SELECT version, name FROM {SERVICE_VERSION_TABLE} ORDER BY version")
        assert handed.fetchall() == [(1, "service"), (2, "user_revocation")]
