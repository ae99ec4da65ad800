"""``python -m harness user add NAME --db FILE``: add a service user and print their token once."""

from __future__ import annotations

import argparse
import sys

from harness.contract.results import ExitCode
from harness.leaderboard.store import StoreError
from harness.service.db import ServiceDb
from harness.service.users import add_user


def _handle(args: argparse.Namespace) -> int:
    try:
        db = ServiceDb.open(args.db)
    except StoreError as error:
        print(f"user: error: --db: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    try:
        with db.locked() as store:
            token = add_user(store.connection, args.name)
    except ValueError as error:
        print(f"user: error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    finally:
        db.close()
    print(f"added user '{args.name}' to {args.db}; this token is shown once, keep it secret:")
    print(f"token: {token}")
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("user", help="manage the submission service's users")
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a user and print their token once")
    add.add_argument("name", help="the user's name (their name on the leaderboard)")
    add.add_argument("--db", required=True, help="the service's SQLite database")
    add.set_defaults(handler=_handle)
