"""The serve command's refusals: workers that could read the database, a second service on one database."""

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from .conftest import harness


def test_serve_refuses_workers_that_would_run_as_its_own_user(tmp_path):
    """Here (root, with Python under a folder uid 65534 cannot search) workers cannot drop privileges."""
    from harness.judge.worker_link.worker_spawn import workers_run_unprivileged

    if workers_run_unprivileged():
        pytest.skip("workers drop to uid 65534 on this host: nothing to refuse")
    done = harness("serve", "--db", str(tmp_path / "s.db"), "--device", "cpu", "--port", "1")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 113 and len(lines) == 1, done.stderr
    assert "could then read the database" in lines[0] and "--same-user-workers" in lines[0]
    assert re.search(r"cannot (search the folder|read) /\S+ .*on its way to /", lines[0]) or "not root" in lines[0]


def test_the_refusal_names_the_folder_uid_65534_cannot_search(monkeypatch):
    from harness.commands import serve_command
    from harness.judge.worker_link import worker_confinement, worker_spawn

    open_folder = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own tmp_path sits under a private folder
    open_folder.chmod(0o755)
    private = open_folder / "private"
    private.mkdir(mode=0o700)
    python = private / "python3"
    python.write_text("")
    python.chmod(0o755)
    monkeypatch.setattr(worker_spawn.sys, "executable", str(python))
    monkeypatch.setattr(serve_command.os, "geteuid", lambda: 0)
    try:
        assert worker_confinement.blocked_at(python) == private
        assert worker_confinement.blocked_at(open_folder) is None
        line = serve_command.same_user_refusal()
    finally:
        shutil.rmtree(open_folder)
    assert f"cannot search the folder {private} (chmod o+x {private}) on its way to {python}" in line


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
