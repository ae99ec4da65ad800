"""The serve command's refusals: workers that could read the database, a second service on one database."""

import os

import pytest

from .conftest import harness


def test_serve_refuses_workers_that_would_run_as_its_own_user(tmp_path):
    """Here (root, with Python under a folder uid 65534 cannot search) workers cannot drop privileges."""
    from harness.judge.worker_process import workers_run_unprivileged

    if workers_run_unprivileged():
        pytest.skip("workers drop to uid 65534 on this host: nothing to refuse")
    done = harness("serve", "--db", str(tmp_path / "s.db"), "--device", "cpu", "--port", "1")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 113 and len(lines) == 1, done.stderr
    assert "could then read the database" in lines[0] and "--same-user-workers" in lines[0]


def test_a_second_service_on_one_database_is_refused_and_the_database_is_private(tmp_path):
    from harness.service.db import ServiceDb, claim

    db = tmp_path / "s.db"
    held = claim(db)
    try:
        done = harness("serve", "--db", str(db), "--device", "cpu", "--port", "1", "--same-user-workers")
        assert done.returncode == 113 and "another harness serve is using this database" in done.stderr
    finally:
        held.close()
    ServiceDb.open(db).close()
    assert os.stat(db).st_mode & 0o777 == 0o600
