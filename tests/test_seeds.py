"""Per-call seeds: public ones reproduce the contest's, secret ones cannot be predicted."""

import os
import subprocess
import sys

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
    assert seeds.SECRET_ENV not in os.environ


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/environ is Linux's")
def test_the_secret_is_wiped_from_the_environment_the_process_started_with():
    """/proc/<pid>/environ shows the starting block, which os.environ.pop leaves as it was: a worker
    that could read the evaluator's file would find the secret there."""
    probe = ("from harness.judge.verdict import seeds; secret = seeds.read_secret(); "
             "block = open('/proc/self/environ', 'rb').read(); "
             "print(secret, b'NVFP4_SECRET_SEED' in block, b'987654321' in block, b'HOME=' in block)")
    run = subprocess.run([sys.executable, "-c", probe], env={**os.environ, seeds.SECRET_ENV: "987654321"},
                         capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["987654321", "False", "False", "True"]


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
