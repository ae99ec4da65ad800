"""Compile caches per owner: kept between one owner's runs, never shared between two, out of each other's reach."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.contract.task_spec import load_task
from harness.judge.worker_link import compile_cache
from harness.judge.worker_link.worker_channel import WorkerSession
from harness.leaderboard.runner import Submission, cache_owner

REPO = Path(__file__).resolve().parent.parent


def test_each_owner_gets_a_folder_of_its_own_named_by_no_one_else(tmp_path):
    root = tmp_path / "compile"
    root.mkdir()
    alice = compile_cache.owner_variables(root, "user\0alice", None)
    again = compile_cache.owner_variables(root, "user\0alice", None)
    bob = compile_cache.owner_variables(root, "user\0bob", None)
    assert alice == again and set(alice) == set(compile_cache.FOLDERS)
    assert not set(alice.values()) & set(bob.values())
    folder = Path(alice["TRITON_CACHE_DIR"]).parent
    assert folder.parent == root and "alice" not in folder.name
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # The salt that names the folders lives beside the root, never in it (a worker may read the root's folders).
    assert sorted(p.name for p in root.iterdir()) == sorted({Path(v).parent.name for v in (*alice.values(),
                                                                                           *bob.values())})
    assert stat.S_IMODE((tmp_path / "compile.salt").stat().st_mode) == 0o600


def test_the_root_is_searchable_but_not_listable_and_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "root"))
    root = compile_cache.root_for(None)
    assert root is not None and stat.S_IMODE(root.stat().st_mode) == 0o711
    monkeypatch.setenv(compile_cache.ENV, "off")
    assert compile_cache.root_for(None) is None


def test_two_leaderboard_authors_never_share_a_cache_even_when_one_claims_the_others_name(tmp_path):
    def entry(name: str, author: str) -> Submission:
        return Submission("nvfp4_gemv", tmp_path / name, name, "0" * 64, author)

    owners = {cache_owner(entry("alice.py", "alice")), cache_owner(entry("bob.py", "bob")),
              cache_owner(entry("mallory.py", "alice"))}
    assert len(owners) == 3
    assert cache_owner(entry("alice.py", "alice")) == cache_owner(entry("alice.py", "alice"))


SUBMISSION = """
import os
from pathlib import Path

own = Path(os.environ["TRITON_CACHE_DIR"])
if (own / "kept.txt").exists():
    (own / "found.txt").write_text("the earlier run's file was there")
(own / "kept.txt").write_text("from an earlier run")
try:
    Path({other!r}, "poisoned.py").write_text("import os")
    (own / "intrusion.txt").write_text("written")
except PermissionError:
    (own / "intrusion.txt").write_text("refused")


def custom_kernel(data):
    return data
"""


def _landlock_status() -> str:
    child = "from harness.worker import landlock; import tempfile; print(landlock.first_layer([tempfile.mkdtemp()])[0])"
    return subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60).stdout.strip()


def test_a_worker_writes_its_owners_cache_and_cannot_reach_another_owners(tmp_path, monkeypatch):
    status = _landlock_status()
    if not status.startswith("on"):
        pytest.skip(f"Landlock is not available on this kernel: {status}")
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "compile"))
    root = compile_cache.root_for(None)
    alice = compile_cache.owner_variables(root, "user\0alice", None)
    task = load_task("nvfp4_gemv")
    submission = tmp_path / "bob.py"
    submission.write_text(SUBMISSION.format(other=alice["TRITON_CACHE_DIR"]))
    for _ in range(2):  # the second run finds what the first one left
        with WorkerSession(task, submission, "cpu", cache_owner="user\0bob") as session:
            ready = session.start()
    bob = Path(compile_cache.owner_variables(root, "user\0bob", None)["TRITON_CACHE_DIR"])
    assert (bob / "found.txt").read_text() == "the earlier run's file was there"
    assert (bob / "intrusion.txt").read_text() == "refused"
    assert not (Path(alice["TRITON_CACHE_DIR"]) / "poisoned.py").exists()
    assert str(bob.parent) in ready.sandbox["writes"] and f"{root}," not in ready.sandbox["writes"] + ","
    assert os.listdir(alice["TRITON_CACHE_DIR"]) == []
