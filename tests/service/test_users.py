"""Tokens: shown once, stored as a salted hash, checked in constant time."""

from __future__ import annotations

import pytest

from harness.service.db import ServiceDb
from harness.service.users import add_user, authenticate


@pytest.fixture
def db(tmp_path):
    db = ServiceDb.open(tmp_path / "service.db")
    yield db
    db.close()


def test_a_token_finds_its_user_and_is_not_stored(db):
    token = add_user(db.connection, "ada")
    user = authenticate(db.connection, token)
    assert user is not None and user.name == "ada"
    [(salt, stored, key_id)] = db.connection.execute("SELECT salt, token_hash, key_id FROM users").fetchall()
    secret = token.rsplit("_", 1)[1]
    assert secret.encode() not in stored and token not in repr(stored) and len(salt) == 16
    assert token.startswith(f"nvfp4_{key_id}_")


def test_wrong_and_malformed_tokens_are_refused(db):
    token = add_user(db.connection, "ada")
    other = add_user(db.connection, "bob")
    key_part, secret = token.rsplit("_", 1)
    assert authenticate(db.connection, f"{key_part}_{secret[:-1]}{'A' if secret[-1] != 'A' else 'B'}") is None
    assert authenticate(db.connection, f"{key_part}_{other.rsplit('_', 1)[1]}") is None  # bob's secret, ada's key
    assert authenticate(db.connection, "nvfp4_0123456789abcdef_" + "x" * 43) is None
    assert authenticate(db.connection, "") is None


def test_two_users_with_one_name_are_refused(db):
    add_user(db.connection, "ada")
    with pytest.raises(ValueError, match="exists already"):
        add_user(db.connection, "ada")
    with pytest.raises(ValueError, match="user name"):
        add_user(db.connection, "ada lovelace")


def test_a_revoked_users_token_is_refused_and_the_list_says_so(db):
    from harness.service.users import list_users, revoke_user

    token = add_user(db.connection, "ada")
    add_user(db.connection, "bob")
    revoke_user(db.connection, "ada")
    assert authenticate(db.connection, token) is None
    listed = {u.name: u for u in list_users(db.connection)}
    assert listed["ada"].revoked_at and listed["bob"].revoked_at is None
    assert listed["ada"].submissions == 0
    with pytest.raises(ValueError, match="no user 'carol'"):
        revoke_user(db.connection, "carol")
    with pytest.raises(ValueError, match="revoked already"):
        revoke_user(db.connection, "ada")


def test_the_user_command_lists_and_revokes(tmp_path, capsys):
    from harness.commands.main import main

    path = str(tmp_path / "s.db")
    assert main(["user", "add", "ada", "--db", path]) == 0
    assert main(["user", "add", "bob", "--db", path]) == 0
    assert main(["user", "revoke", "bob", "--db", path]) == 0
    capsys.readouterr()
    assert main(["user", "list", "--db", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["name", "added", "submissions", "revoked"]
    ada, bob = (next(line for line in out if line.startswith(name)) for name in ("ada", "bob"))
    assert ada.split()[-2:] == ["0", "-"] and bob.split()[-1] != "-"
    assert main(["user", "revoke", "carol", "--db", path]) == 113
    assert "no user 'carol'" in capsys.readouterr().err
