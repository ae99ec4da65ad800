"""The submission service under load through the real client, with a kill and restart mid-queue.

N submissions from U users are sent at once (`python -m harness submit`, one process each, every
file its own bytes) to `python -m harness serve --cluster local` (or the service's own serial
executor with --serial). With --kill-after K, once K are answered the service is SIGKILLed (its
process group: the service, its local cluster, their evaluations) and started again on the same
database and port; the clients keep polling across it. Then it checks: every submission answered
exactly once (its client printed one report and exited with the expected code; the database holds
one result), none lost, none answered twice (the dispatcher's 'answered twice' warning), each user
seeing only their own submissions (and another user's as absent), and the queue's throughput:
answered per minute from the first upload to the last answer as the clients saw it, and the
queue's own (from the first job's start to the last job's end, as the service's database records
them: what two GPUs against one compares, without the clients' start), each also without the
restart's gap.

    python3 scripts/service_load.py OUT_DIR --submissions 100 --users 10 --kill-after 30 \\
        --file submissions/nvfp4_gemv/triton_gemv.py --mode test --device cuda   # -> OUT_DIR/summary.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.service.db import ServiceDb  # noqa: E402  (the repository root first)
from harness.service.users import add_user  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Service:
    """One `harness serve` in its own session (a kill takes its cluster and evaluations with it)."""

    def __init__(self, args: argparse.Namespace, db: Path, log: Path) -> None:
        self.args, self.db, self.log, self.port = args, db, log, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> float:
        """Start it and wait until it answers; return the seconds that took."""
        started = time.monotonic()
        cluster = [] if self.args.serial else ["--cluster", "local"]
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "harness", "serve", "--port", str(self.port), "--db", str(self.db), "--device",
                 self.args.device, "--same-user-workers", "--max-unfinished", str(self.args.submissions),
                 "--per-hour", str(10 * self.args.submissions), *cluster],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        while time.monotonic() - started < 300:
            if self.process.poll() is not None:
                raise SystemExit(f"the service exited: {self.log.read_text()[-3000:]}")
            try:
                if requests.get(self.url + "/", timeout=2).status_code == 200:
                    return time.monotonic() - started
            except requests.ConnectionError:
                pass
            time.sleep(0.2)
        raise SystemExit("the service did not answer in 300 s")

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def users(db: Path, count: int) -> dict[str, str]:
    """name -> token, added straight into the service's database."""
    service_db = ServiceDb.open(db)
    try:
        return {f"user{index:02d}": add_user(service_db.connection, f"user{index:02d}") for index in range(count)}
    finally:
        service_db.close()


def answered(db: Path) -> int:
    with sqlite3.connect(db, timeout=30) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM submissions WHERE status = 'done'").fetchone()[0])


def own_only(service: Service, tokens: dict[str, str], expected: dict[str, int]) -> list[str]:
    """Every way a user saw what is not theirs (or missed their own); empty when all is well."""
    problems, listed = [], {}
    for name, token in tokens.items():
        jobs = requests.get(f"{service.url}/submissions", headers={"Authorization": f"Bearer {token}"},
                            timeout=30).json()
        listed[name] = [job["id"] for job in jobs]
        if {job["user"] for job in jobs} - {name} or len(jobs) != expected[name]:
            problems.append(f"{name} listed {len(jobs)} submission(s) of users {sorted({j['user'] for j in jobs})}")
    names = sorted(tokens)
    for mine, other in zip(names, names[1:] + names[:1]):
        if mine != other and listed[other]:
            seen = requests.get(f"{service.url}/submissions/{listed[other][0]}",
                                headers={"Authorization": f"Bearer {tokens[mine]}"}, timeout=30)
            if seen.status_code != 404:
                problems.append(f"{mine} read {other}'s submission ({seen.status_code})")
    return problems


@dataclass
class Outcome:
    """What a load run left: per client its exit code and the reports it printed; per stored
    submission its status, whether a result is stored, attempts, start and end (ISO, to the second)."""

    codes: list[int | None]
    reports: list[int]
    rows: list[tuple[str, bool, int, str | None, str | None]]
    log_text: str
    client_wall_s: float | None
    gap_s: float | None  # the restart's gap (kill to answering again), None: no kill


def _seconds(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp).timestamp()


def account(outcome: Outcome, expect_exit: int) -> dict[str, Any]:
    """The load run's accounting: answered once, twice or never, re-queued, and the throughputs."""
    once = sum(1 for code, count in zip(outcome.codes, outcome.reports) if code == expect_exit and count == 1)
    done = [row for row in outcome.rows if row[0] == "done"]
    starts = [_seconds(row[3]) for row in done if row[3]]
    ends = [_seconds(row[4]) for row in done if row[4]]
    queue_s = max(ends) - min(starts) if starts and ends and max(ends) > min(starts) else None
    gap = outcome.gap_s or 0.0
    requeued = sum(int(n) for n in re.findall(r"re-queued (\d+) job", outcome.log_text))

    def per_min(count: int, wall: float | None, less: float = 0.0) -> float | None:
        return round(60 * count / (wall - less), 2) if wall and wall > less else None

    return {
        "answered_once": once,
        "answered_twice": sum(count > 1 for count in outcome.reports)
        + len(re.findall(r"answered twice", outcome.log_text)),
        "lost": sum(count == 0 for count in outcome.reports) + sum(row[0] != "done" for row in outcome.rows),
        "stored_results": sum(bool(row[1]) for row in outcome.rows), "attempts": sum(row[2] for row in outcome.rows),
        "requeued_at_restart": requeued,
        "extra_runs": sum(max(0, row[2] - 1) for row in outcome.rows) - requeued,  # runs again beyond the restart's
        "exit_codes": {str(code): outcome.codes.count(code) for code in sorted(set(outcome.codes), key=str)},
        "restart_gap_s": round(gap, 1) if outcome.gap_s is not None else None,
        "wall_s": round(outcome.client_wall_s, 1) if outcome.client_wall_s else None,
        "per_min": per_min(once, outcome.client_wall_s),
        "per_min_without_restart": per_min(once, outcome.client_wall_s, gap),
        "queue_s": round(queue_s, 1) if queue_s else None,
        "queue_per_min": per_min(len(done), queue_s),
        "queue_per_min_without_restart": per_min(len(done), queue_s, gap),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--submissions", type=int, default=100)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--kill-after", type=int, default=0, help="answered submissions before the kill (0: none)")
    parser.add_argument("--file", type=Path, default=REPO / "submissions" / "nvfp4_gemv" / "triton_gemv.py")
    parser.add_argument("--mode", default="test")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--expect-exit", type=int, default=0, help="the clients' exit code for this file")
    parser.add_argument("--serial", action="store_true", help="the service's own serial executor, no cluster")
    parser.add_argument("--timeout-s", type=float, default=1800, help="clients still waiting then count as lost")
    parser.add_argument("--poll-s", type=float, help="the clients' poll period (default: 0.5 s, 1 s a 50 clients)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    db, files = args.out / "service.db", args.out / "files"
    files.mkdir(exist_ok=True)
    tokens = users(db, args.users)
    names = sorted(tokens)
    source = args.file.read_text()
    poll_s = args.poll_s or max(0.5, args.submissions / 50)  # a hundred clients polling twice a second load the service
    service = Service(args, db, args.out / "server.log")
    start_s = service.start()
    clients = []
    began = time.monotonic()
    for index in range(args.submissions):
        path = files / f"sub_{index:03d}.py"
        path.write_text(f"{source}\n# submission {index}\n")
        name = names[index % len(names)]
        log = (args.out / f"client_{index:03d}.log").open("w")
        clients.append((name, log, subprocess.Popen(
            [sys.executable, "-m", "harness", "submit", str(path), "--mode", args.mode, "--server", service.url,
             "--token", tokens[name], "--poll-s", str(poll_s)], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)))
    kill_at = back_at = None
    ended: dict[int, float] = {}
    while len(ended) < len(clients) and time.monotonic() - began < args.timeout_s:
        for index, (_, _, process) in enumerate(clients):
            if index not in ended and process.poll() is not None:
                ended[index] = time.monotonic()
        if args.kill_after and kill_at is None and answered(db) >= args.kill_after:
            kill_at = time.monotonic()
            service.kill()
            service.start()
            back_at = time.monotonic()
        time.sleep(0.2)
    for _, log, process in clients:
        if process.poll() is None:
            process.kill()
        log.close()
    reports = [(args.out / f"client_{index:03d}.log").read_text().count("\nResult: ") for index in range(len(clients))]
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT status, result_json IS NOT NULL, attempts, started_at, finished_at "
                                  "FROM submissions").fetchall()
    isolation = own_only(service, tokens, {name: sum(n == name for n, _, _ in clients) for name in names})
    service.stop()
    gap = (back_at - kill_at) if kill_at is not None and back_at is not None else None
    outcome = Outcome(codes=[process.returncode for _, _, process in clients], reports=reports, rows=rows,
                      log_text=service.log.read_text(), client_wall_s=(max(ended.values()) - began) if ended else None,
                      gap_s=gap)
    summary = {
        "submissions": args.submissions, "users": args.users, "executor": "serial" if args.serial else "cluster local",
        "file": args.file.name, "mode": args.mode,
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""), "service_start_s": round(start_s, 1),
        "killed_after": args.kill_after or None, "own_only_problems": isolation, **account(outcome, args.expect_exit),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 0 if summary["answered_once"] == args.submissions and not isolation else 1


if __name__ == "__main__":
    sys.exit(main())
