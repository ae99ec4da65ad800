"""A restart loses nothing: jobs queued or running when the service dies finish after it starts again."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import requests

from .conftest import GEMV, REPO, add_user, bearer, wait_done


def test_a_killed_service_finishes_every_job_once_after_a_restart(service_factory):
    server = service_factory("--max-unfinished", "5")
    token = add_user(server.db, "quinn")
    server.start()
    ids = [requests.post(f"{server.url}/submissions", headers=bearer(token), data={"mode": "test"},
                         files={"file": ("torch_reference.py", GEMV.read_bytes())}, timeout=30).json()["id"]
           for _ in range(2)]
    client = subprocess.Popen(  # a third job, followed by the real client across the restart
        [sys.executable, "-m", "harness", "submit", str(GEMV), "--server", server.url, "--token", token,
         "--poll-s", "0.2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def statuses() -> list[str]:
        return [job["status"] for job in requests.get(f"{server.url}/submissions", headers=bearer(token),
                                                      timeout=10).json()]

    deadline = time.monotonic() + 90
    while (now := statuses()) != ["running", "queued", "queued"]:  # the client's upload is in, the first runs
        assert time.monotonic() < deadline and "done" not in now, now
        time.sleep(0.1)

    server.kill()
    server.start()  # same database, same port
    done = [wait_done(server, token, job_id) for job_id in ids]
    out, err = client.communicate(timeout=180)

    assert client.returncode == 0, err
    assert "Result: PASS (exit code 0)" in out
    assert all(job["result"]["status"] == "passed" for job in done)
    assert done[0]["attempts"] == 2  # it was running when the service died: run again, once
    with sqlite3.connect(server.db) as connection:
        rows = connection.execute("SELECT status, COUNT(*), SUM(result_json IS NOT NULL) FROM submissions "
                                  "GROUP BY status").fetchall()
    assert rows == [("done", 3, 3)]  # nothing lost, nothing doubled
    assert "re-queued 1 job(s)" in server.log.read_text()
