"""Users and their tokens, for ``python -m harness user add|list|revoke NAME --db FILE``.

A token is ``nvfp4_<key id>_<secret>``. The key id is stored as is and finds the user's row; the
secret is stored only as a salted scrypt hash and compared in constant time. The token is shown
once, when the user is added; losing it means adding a new user name. A revoked user's token is
refused; their submissions and runs stay.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from harness.sqlite_migrations import utc_now

TOKEN = re.compile(r"^nvfp4_([0-9a-f]{16})_([A-Za-z0-9_-]{20,})$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SCRYPT = {"n": 2**14, "r": 8, "p": 1, "dklen": 32}


@dataclass(frozen=True)
class User:
    id: int
    name: str


@dataclass(frozen=True)
class UserRecord:
    """A user as the organizer's list shows them."""

    name: str
    created_at: str
    revoked_at: str | None
    submissions: int


def _hash(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, **SCRYPT)


def add_user(connection: sqlite3.Connection, name: str) -> str:
    """Create a user and return their token (the only time it exists in clear)."""
    if not NAME.match(name):
        raise ValueError(f"user name '{name}': use letters, digits, '.', '_' or '-' (at most 64)")
    key_id, secret, salt = secrets.token_hex(8), secrets.token_urlsafe(32), secrets.token_bytes(16)
    try:
        with connection:
            connection.execute("INSERT INTO users (name, key_id, salt, token_hash, created_at) VALUES (?, ?, ?, ?, ?)",
                               (name, key_id, salt, _hash(secret, salt), utc_now()))
    except sqlite3.IntegrityError:
        raise ValueError(f"user '{name}' exists already; pick another name") from None
    return f"nvfp4_{key_id}_{secret}"


def authenticate(connection: sqlite3.Connection, token: str,
                 lock: AbstractContextManager[object] | None = None) -> User | None:
    """The token's user, or None for a malformed, unknown or wrong token.

    ``lock`` guards only the look-up: the deliberately slow hash runs outside it.
    """
    match = TOKEN.match(token)
    if not match:
        return None
    key_id, secret = match.groups()
    with lock or nullcontext():
        row = connection.execute("SELECT id, name, salt, token_hash FROM users WHERE key_id = ? AND revoked_at IS NULL",
                                 (key_id,)).fetchone()
    if row is None:
        return None
    user_id, name, salt, expected = row
    return User(user_id, name) if hmac.compare_digest(_hash(secret, salt), expected) else None


def list_users(connection: sqlite3.Connection) -> list[UserRecord]:
    """Every user, in the order they were added, with how many files each submitted."""
    rows = connection.execute(
        "SELECT u.name, u.created_at, u.revoked_at, COUNT(s.id) FROM users u "
        "LEFT JOIN submissions s ON s.user_id = u.id GROUP BY u.id ORDER BY u.id").fetchall()
    return [UserRecord(*row) for row in rows]


def revoke_user(connection: sqlite3.Connection, name: str) -> None:
    """Refuse ``name``'s token from now on; ValueError when there is no such user, or it is revoked."""
    with connection:
        row = connection.execute("SELECT revoked_at FROM users WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise ValueError(f"no user '{name}' (python -m harness user list shows them)")
        if row[0] is not None:
            raise ValueError(f"user '{name}' was revoked already, at {row[0]}")
        connection.execute("UPDATE users SET revoked_at = ? WHERE name = ?", (utc_now(), name))
