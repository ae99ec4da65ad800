"""``python -m harness submit FILE``: upload to a submission service, follow it, print the report.

The command's part only; the client is ``harness.service.client``. The report and the exit code
are those of ``harness eval`` (``harness.display.report.render``, ``RunResult.exit_code``), so
scripts treat a remote run like a local one. Anything the service refuses (a bad token, a limit, a
bad file) or an unreachable service is one line on stderr and exit code 113.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.contract.results import ExitCode, RunResult
from harness.contract.submission_file import SubmissionFileError, read_submission
from harness.display import report
from harness.judge.verdict.modes import SERVICE_MODES
from harness.service.client import SERVER_ENV, TOKEN_ENV, ClientError, follow, resolve_connection, upload


def _handle(args: argparse.Namespace) -> int:
    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    path = Path(args.file)
    try:
        read_submission(path)  # a file that cannot run is refused here, before any upload
        connection = resolve_connection(args.server, args.token)
        job = upload(connection, path, args.mode, args.problem)  # else the service reads the file's POPCORN line
        say(f"submitted {path.name} as submission {job['id']} ({job['problem']}, {job['mode']} mode) "
            f"to {connection.server}: queued, position {job['position']}")
        job = follow(connection, job["id"], poll_s=args.poll_s, say=say)
    except (SubmissionFileError, ClientError) as error:
        say(f"submit: error: {error}")
        return int(ExitCode.BAD_INPUT)
    result = RunResult.from_json(job["result"])
    result.submission_path = str(path)
    print(report.render(result))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(job["result"], indent=2))
    return int(result.exit_code)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("submit", help="submit a file to a submission service and wait for its report")
    parser.add_argument("file", help="your submission .py file")
    parser.add_argument("--mode", choices=SERVICE_MODES, default="test",
                        help="test (default), benchmark, or leaderboard (a ranked run with the secret seed)")
    parser.add_argument("--problem", help="default: the file's '#!POPCORN leaderboard' line")
    parser.add_argument("--server", help=f"service URL (default: ${SERVER_ENV}, then the config file)")
    parser.add_argument("--token", help=f"your token (default: ${TOKEN_ENV}, then the config file)")
    parser.add_argument("--json", help="also write the result JSON (as harness eval --json) to this file")
    parser.add_argument("--poll-s", type=float, default=1.0, help="seconds between status checks (default: 1)")
    parser.set_defaults(handler=_handle)
