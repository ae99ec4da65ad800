"""The service on a Dask cluster (`harness serve --cluster local`, CPU workers), through the real client:
two users' queued submissions survive a service kill and restart; every one is answered exactly
once, none is stored twice, and each user sees only their own."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import requests

from .conftest import REPO, add_user, bearer, wait_done

WRONG = "#!POPCORN leaderboard nvfp4_gemm\ndef custom_kernel(data):\n    return None\n"  # a quick verdict


def _submit(server, token: str, path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", "submit", str(path), "--server", server.url, "--token",
                             token, "--poll-s", "0.2"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _statuses(server, token: str) -> list[str]:
    return [job["status"] for job in requests.get(f"{server.url}/submissions", headers=bearer(token),
                                                  timeout=10).json()]


def test_a_killed_cluster_service_answers_every_submission_once(service_factory, tmp_path):
    server = service_factory("--cluster", "local", "--max-unfinished", "5")
    tokens = {name: add_user(server.db, name) for name in ("ada", "bob")}
    server.start()
    wrong = tmp_path / "wrong.py"
    wrong.write_text(WRONG)
    clients = {name: [_submit(server, token, wrong) for _ in range(2)] for name, token in tokens.items()}

    deadline = time.monotonic() + 120
    while True:  # every upload is in and the cluster's two workers run one job each
        now = [status for token in tokens.values() for status in _statuses(server, token)]
        if len(now) == 4 and now.count("running") == 2:
            break
        assert time.monotonic() < deadline and "done" not in now, now
        time.sleep(0.1)
    server.kill()  # the service, its local cluster and its evaluations, as a power cut would
    server.start()  # same database, same port: a new cluster

    for name, token in tokens.items():
        mine = requests.get(f"{server.url}/submissions", headers=bearer(token), timeout=10).json()
        assert {job["user"] for job in mine} == {name} and len(mine) == 2  # only their own
        for job in mine:
            assert wait_done(server, token, job["id"], timeout_s=240)["result"]["status"] == "failed"
    for name, processes in clients.items():
        for process in processes:
            out, err = process.communicate(timeout=240)
            assert process.returncode == 112 and "Result: FAIL" in out, (name, out, err)
    with sqlite3.connect(server.db) as connection:
        rows = connection.execute("SELECT status, COUNT(*), SUM(result_json IS NOT NULL), SUM(attempts) "
                                  "FROM submissions GROUP BY status").fetchall()
    assert rows == [("done", 4, 4, 6)]  # the two running at the kill ran again, once; nothing doubled
    assert "re-queued 2 job(s)" in server.log.read_text()
