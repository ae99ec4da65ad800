"""``python -m harness user add|list|revoke``: the submission service's users, for its organizer.

``add NAME`` prints the user's token once; ``list`` shows every user, when added, how many files
each submitted and whether revoked; ``revoke NAME`` refuses the user's token from then on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from harness.contract.results import ExitCode
from harness.display.tables import text_table
from harness.service.db import ServiceDb
from harness.service.users import add_user, list_users, revoke_user
from harness.sqlite_migrations import StoreError


def _with_db(args: argparse.Namespace, action: Callable[[Any], int]) -> int:
    """Run ``action`` on the service database under its lock; one line and 113 for what it refuses."""
    try:
        db = ServiceDb.open(args.db)
    except StoreError as error:
        print(f"user: error: --db: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    try:
        with db.locked() as store:
            return action(store.connection)
    except ValueError as error:
        print(f"user: error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    finally:
        db.close()


def _add(args: argparse.Namespace) -> int:
    def add(connection: Any) -> int:
        token = add_user(connection, args.name)
        print(f"added user '{args.name}' to {args.db}; this token is shown once, keep it secret:")
        print(f"token: {token}")
        return int(ExitCode.PASSED)
    return _with_db(args, add)


def _list(args: argparse.Namespace) -> int:
    def show(connection: Any) -> int:
        users = list_users(connection)
        rows = [[u.name, u.created_at, str(u.submissions), u.revoked_at or "-"] for u in users]
        print("\n".join(text_table(["name", "added", "submissions", "revoked"], rows, right=(2,))))
        print(f"\n{len(users)} user(s) in {args.db}")
        return int(ExitCode.PASSED)
    return _with_db(args, show)


def _revoke(args: argparse.Namespace) -> int:
    def revoke(connection: Any) -> int:
        revoke_user(connection, args.name)
        print(f"revoked '{args.name}' in {args.db}: their token is refused from now on; their runs stay")
        return int(ExitCode.PASSED)
    return _with_db(args, revoke)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("user", help="manage the submission service's users (add, list, revoke)")
    actions = parser.add_subparsers(dest="action", required=True)
    for name, handler, help_text in (("add", _add, "add a user and print their token once"),
                                     ("list", _list, "list every user: added when, submissions, revoked"),
                                     ("revoke", _revoke, "refuse a user's token from now on")):
        action = actions.add_parser(name, help=help_text)
        if name != "list":
            action.add_argument("name", help="the user's name (their name on the leaderboard)")
        action.add_argument("--db", required=True, help="the service's SQLite database")
        action.set_defaults(handler=handler)
