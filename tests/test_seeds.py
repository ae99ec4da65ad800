"""Per-call seeds: public ones reproduce the contest's, secret ones cannot be predicted."""

import pytest

from harness.judge.verdict import seeds


def test_first_public_call_uses_the_case_seed():
    assert seeds.call_seed(1111, 0) == 1111


def test_every_call_gets_a_different_seed():
    assert len({seeds.call_seed(1111, i) for i in range(1000)}) == 1000


def test_secret_changes_every_seed_including_the_first():
    public = [seeds.call_seed(1111, i) for i in range(10)]
    secret = [seeds.call_seed(1111, i, secret=42) for i in range(10)]
    assert not set(public) & set(secret)
    assert secret == [seeds.call_seed(1111, i, secret=42) for i in range(10)]
    assert all(0 <= s < 2**63 for s in secret)


def test_secret_is_read_from_the_environment_and_removed(monkeypatch):
    monkeypatch.setenv(seeds.SECRET_ENV, "0x2a")
    assert seeds.read_secret() == 42
    assert seeds.SECRET_ENV not in __import__("os").environ


def test_secret_file_and_bad_values(tmp_path):
    path = tmp_path / "seed"
    path.write_text("123\n")
    path.chmod(0o644)
    with pytest.raises(ValueError, match=r"readable by other users.*chmod 600"):
        seeds.read_secret(path)
    path.chmod(0o600)
    assert seeds.read_secret(path) == 123
    path.write_text("not a number")
    with pytest.raises(ValueError, match="must be an integer"):
        seeds.read_secret(path)
