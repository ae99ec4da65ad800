"""``python -m harness serve``: the submission service (FastAPI on uvicorn) and its dispatcher.

Why FastAPI on uvicorn: multipart uploads, typed path and form parameters, header dependencies
(the token) and one-line error handlers come with it, uvicorn is a single-process ASGI server
that a test can start on a loopback port, and both are small pure-Python installs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from harness.contract.results import ExitCode
from harness.judge.verdict import seeds
from harness.sqlite_migrations import StoreError

DEFAULT_DB = "results/service.db"
def same_user_refusal() -> str:
    """Why workers would run as the service's own user, naming what stops uid 65534, and what to do."""
    from harness.judge.worker_link import worker_confinement
    from harness.judge.worker_link.worker_spawn import unreachable_code

    uid = worker_confinement.UNPRIVILEGED_UID
    blocked = unreachable_code()
    if os.geteuid() != 0:
        why = f"serve runs as uid {os.geteuid()}, not root, so workers cannot switch to uid {uid}"
    elif blocked:
        file, at = blocked
        stop = f"cannot search the folder {at} (chmod o+x {at})" if at != file else f"cannot read {file}"
        why = f"uid {uid}, which workers drop to, {stop} on its way to {file}"
    else:
        why = f"the sandbox's uid step is off on this host, so workers do not drop to uid {uid}"
    return (f"workers would run as this service's own user, and a submission could then read the database (every "
            f"user's code) and the secret: {why}; fix that, or run with --cluster and workers on other hosts; "
            "--same-user-workers runs anyway (a trial)")
log = logging.getLogger("harness.service")


def _handle(args: argparse.Namespace) -> int:
    import torch
    import uvicorn

    from harness.contract.task_spec import contest_problems
    from harness.execution.dask_executor import ClusterError, open_executor
    from harness.judge.worker_link.worker_spawn import workers_run_unprivileged
    from harness.service.app import create_app
    from harness.service.db import ServiceDb, claim
    from harness.service.dispatcher import Dispatcher
    from harness.service.limits import Limits, parse_deadline

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    problems = contest_problems()
    try:
        deadlines = dict(parse_deadline(text) for text in args.deadline)
        unknown = sorted(set(deadlines) - set(problems))
        if unknown:
            raise ValueError(f"--deadline: unknown problem(s) {', '.join(unknown)}: choose from {', '.join(problems)}")
        parallel = 1 if args.parallel is None else args.parallel  # None: one per cluster worker
        if min(args.max_file_bytes, args.per_hour, args.max_unfinished, parallel) < 1:
            raise ValueError("--max-file-bytes, --per-hour, --max-unfinished and --parallel must be at least 1")
        if args.cluster is None and not workers_run_unprivileged() and not args.same_user_workers:
            raise ValueError(same_user_refusal())
        secret = seeds.read_secret(args.secret_seed_file)
        lock = claim(args.db)
        db = ServiceDb.open(args.db)
    except (OSError, ValueError, StoreError) as error:
        print(f"serve: error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    if secret is None:
        log.warning("no secret seed ($%s or --secret-seed-file): leaderboard-mode runs use public seeds and are "
                    "not rankable", seeds.SECRET_ENV)
    settings = Limits(args.max_file_bytes, args.per_hour, args.max_unfinished, deadlines)
    if args.same_user_workers and args.cluster is None and not workers_run_unprivileged():
        log.warning("workers run as this service's user (--same-user-workers): a submission can read the "
                    "database, every user's code in it, and the secret")
    try:
        executor = open_executor(args.cluster, progress=lambda line: log.info("  %s", line), device=args.device)
    except (ValueError, ClusterError) as error:
        print(f"serve: error: {error}", file=sys.stderr)
        db.close()
        lock.close()
        return int(ExitCode.BAD_INPUT)
    dispatcher = Dispatcher(db, executor, device=args.device, secret_seed=secret, parallel=args.parallel)
    dispatcher.start()
    try:
        runs_on = args.device or (None if args.cluster else ("cuda" if torch.cuda.is_available() else "cpu"))
        uvicorn.run(create_app(db, settings, problems, runs_on), host=args.host, port=args.port, log_level="info")
    finally:
        dispatcher.stop()
        db.close()
        lock.close()
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the submission service (HTTP API, queue, leaderboard pages)",
        description="Accept submissions over HTTP, evaluate them one by one (or on a cluster) and keep "
                    "everything in one SQLite database; see docs/service.md.")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    parser.add_argument("--db", default=DEFAULT_DB, help=f"SQLite database (default: {DEFAULT_DB})")
    parser.add_argument("--cluster", help="where jobs run: passed to harness.execution.dask_executor.open_executor "
                        "(default: in this process, one after another)")
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when the executing host has a GPU")
    parser.add_argument("--secret-seed-file", help="file holding the organizer's secret seed for ranked runs "
                        "(default: $NVFP4_SECRET_SEED)")
    parser.add_argument("--same-user-workers", action="store_true",
                        help="run even where in-process workers cannot drop to another user (a trial service: "
                             "a submission can then read the database and the secret)")
    parser.add_argument("--parallel", type=int, help="jobs handed to the executor at once (default: 1, or one per "
                        "worker of --cluster)")
    parser.add_argument("--max-file-bytes", type=int, default=256 * 1024, help="upload limit (default: 262144)")
    parser.add_argument("--per-hour", type=int, default=30, help="submissions per user per hour (default: 30)")
    parser.add_argument("--max-unfinished", type=int, default=2,
                        help="queued + running submissions per user (default: 2)")
    parser.add_argument("--deadline", action="append", default=[], metavar="PROBLEM=TIME",
                        help="after TIME (ISO 8601, UTC unless it says) ranked submissions to PROBLEM are refused; "
                             "repeat per problem")
    parser.set_defaults(handler=_handle)
