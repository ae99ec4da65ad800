"""A ranked leaderboard on a TCP Dask cluster whose scheduler is killed mid-run and started again.

Issue 35 on the GPU host (tests/test_cluster_faults.py shows the same on CPU workers): a scheduler
on loopback, one `dask worker` per GPU under a supervisor loop (a worker that loses its scheduler
exits, and the loop starts it again, as systemd would), and `python -m harness leaderboard
--cluster tcp://...` over COPIES copies of one file. Once every worker has started a job, and
--kill-after-s later, the scheduler is SIGKILLed and a new one started on its port. Then: the
command's exit code, the jobs sent again, each entry on the pages exactly once, and each run
stored once (its key unique).

    python3 scripts/scheduler_restart.py OUT --file submissions/nvfp4_gemv/triton_gemv.py --copies 4
        # -> OUT/summary.json, OUT/leaderboard.log, OUT/cluster.log
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LISTS = ("ranking", "others", "not_rankable", "failed", "not_run")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scheduler(port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                             str(port), "--no-dashboard"], stdout=log.open("a"), stderr=subprocess.STDOUT)


def supervised_worker(address: str, slot: str, device: str, log: Path) -> subprocess.Popen:
    """One worker, started again whenever it exits; on the GPU pinned to GPU ``slot``."""
    pinned = f"CUDA_VISIBLE_DEVICES={slot} " if device == "cuda" else ""
    command = (f"while true; do {pinned}{sys.executable} -m distributed.cli.dask_worker {address} --nthreads 1 "
               f"--resources GPU=1 --name worker{slot} --no-dashboard --no-nanny; sleep 0.2; done")
    return subprocess.Popen(["bash", "-c", command], cwd=REPO, stdout=log.open("a"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def wait_for_workers(address: str, count: int) -> None:
    from distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(count, timeout=180)


def copies(file: Path, count: int, root: Path) -> Path:
    """``count`` copies of ``file`` under root/submissions/<its problem>, each its own bytes."""
    folder = root / "submissions" / file.resolve().parent.name
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(1, count + 1):
        (folder / f"{file.stem}_{index}.py").write_text(f"{file.read_text()}\n# copy {index} for the restart run\n")
    return root / "submissions"


def pages(site: Path) -> dict[str, list[str]]:
    """Each file on the pages and the lists it is in (one, for a correct page)."""
    found: dict[str, list[str]] = {}
    for board_path in site.glob("*/leaderboard.json"):
        board = json.loads(board_path.read_text())
        for kind in LISTS:
            for entry in board.get(kind, []):
                found.setdefault(entry["file"], []).append(kind)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--file", type=Path, default=REPO / "submissions" / "nvfp4_gemv" / "triton_gemv.py")
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="one per GPU (GPU 0, 1, ...)")
    parser.add_argument("--kill-after-s", type=float, default=5.0, help="after every worker has started a job")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), args.out / "cluster.log"
    address = f"tcp://127.0.0.1:{port}"
    schedulers = [scheduler(port, log)]
    workers = [supervised_worker(address, str(index), args.device, log) for index in range(args.workers)]
    lines: list[str] = []
    try:
        wait_for_workers(address, args.workers)
        submissions = copies(args.file, args.copies, args.out)
        db, site = args.out / "restart.db", args.out / "site"
        started = time.monotonic()
        command = subprocess.Popen(
            [sys.executable, "-m", "harness", "leaderboard", "--cluster", address, "--device", args.device,
             "--submissions", str(submissions), "--db", str(db), "--out", str(site), "--gpu-check", "none", "--force"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=lambda: [lines.append(line) for line in command.stderr], daemon=True)
        reader.start()
        killed_at = None
        while command.poll() is None:
            if killed_at is None and sum(": started" in line for line in lines) >= args.workers:
                time.sleep(args.kill_after_s)
                schedulers[0].kill()
                schedulers[0].wait()
                killed_at = round(time.monotonic() - started, 1)
                schedulers.append(scheduler(port, log))
            time.sleep(0.2)
        reader.join(30)
        wall = time.monotonic() - started
    finally:
        for process in schedulers:
            process.kill()
        for worker in workers:
            os.killpg(worker.pid, signal.SIGKILL)
    (args.out / "leaderboard.log").write_text("".join(lines))
    text = "".join(lines)
    on_pages = pages(site)
    with sqlite3.connect(db) as connection:
        keys = connection.execute("SELECT run_key, COUNT(*) FROM runs WHERE run_key IS NOT NULL GROUP BY run_key")
        stored = [count for _, count in keys]
    summary = {
        "exit": command.returncode, "wall_s": round(wall, 1), "killed_at_s": killed_at,
        "schedulers_started": len(schedulers), "entries": args.copies,
        "sent_again": text.count("its Dask task was lost with the scheduler; sent again"),
        "ranked_once": sum(kinds in (["ranking"], ["others"]) for kinds in on_pages.values()),
        "listed_once": sum(len(kinds) == 1 for kinds in on_pages.values()),
        "lost": args.copies - len(on_pages) + sum(kinds == ["not_run"] for kinds in on_pages.values()),
        "doubled": sum(len(kinds) > 1 for kinds in on_pages.values()) + sum(count - 1 for count in stored),
        "runs_stored": sum(stored),
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    ok = summary["exit"] == 0 and killed_at is not None and summary["listed_once"] == args.copies
    return 0 if ok and not summary["lost"] and not summary["doubled"] else 1


if __name__ == "__main__":
    sys.exit(main())
