"""The worker's sandbox steps, each where this kernel allows it (Landlock checked in a child)."""

import subprocess
import sys
import textwrap

import pytest

from harness import sandbox

CHILD = textwrap.dedent("""
    import os, sys
    from harness import sandbox
    inside, outside = sys.argv[1], sys.argv[2]
    print(sandbox._landlock([inside]))
    os.makedirs(os.path.join(inside, "tmp"))
    os.makedirs(os.path.join(inside, "cache"))
    with open(os.path.join(inside, "tmp", "build.so"), "w") as handle:
        handle.write("x")
    # What Triton's cache does: a finished build renamed from a temporary folder into place.
    os.replace(os.path.join(inside, "tmp", "build.so"), os.path.join(inside, "cache", "build.so"))
    print("rename ok")
    try:
        open(os.path.join(outside, "escape"), "w").close()
        print("outside writable")
    except PermissionError:
        print("outside refused")
""")


def test_landlock_allows_renames_in_the_workdir_and_refuses_writes_elsewhere(tmp_path):
    inside, outside = tmp_path / "work", tmp_path / "other"
    inside.mkdir()
    outside.mkdir()
    run = subprocess.run([sys.executable, "-c", CHILD, str(inside), str(outside)], capture_output=True, text=True,
                         timeout=60)
    status, *rest = run.stdout.splitlines() or [""]
    if status.startswith("off"):
        pytest.skip(f"Landlock is not available on this kernel: {status}")
    assert run.returncode == 0, run.stderr
    assert status.startswith("on: writes only in") and rest == ["rename ok", "outside refused"]


def test_steps_come_from_the_environment(monkeypatch):
    monkeypatch.delenv(sandbox.STEPS_ENV, raising=False)
    assert sandbox.chosen_steps() == frozenset(sandbox.STEPS)
    monkeypatch.setenv(sandbox.STEPS_ENV, "netns, uid,bogus")
    assert sandbox.chosen_steps() == frozenset({"netns", "uid"})
