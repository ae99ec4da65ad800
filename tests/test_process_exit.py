"""harness/process_exit.py: ``python -m harness`` ends with its code, its output flushed and its exit handlers
run, without the interpreter's teardown."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import atexit, sys, tempfile, weakref
from pathlib import Path
from harness.process_exit import exit_now
folder = tempfile.TemporaryDirectory(prefix="nvfp4-exit-test-")  # removed by its finalizer at exit
print(folder.name)
atexit.register(lambda: print("handler ran"))
sys.stdout.write("buffered, no newline")
sys.stderr.write("to stderr")
exit_now(7)
print("never")
"""


def test_the_code_the_output_and_the_exit_handlers_all_come_through() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 7
    folder, *rest = done.stdout.splitlines()
    assert rest == ["buffered, no newlinehandler ran"]  # the write before exit_now, then the handler's
    assert "never" not in done.stdout and done.stderr == "to stderr"
    assert not Path(folder).exists()  # the temporary folder's finalizer ran


def test_python_m_harness_ends_with_its_commands_code() -> None:
    done = subprocess.run([sys.executable, "-m", "harness", "eval", "no_such_problem", "missing.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 113 and "Traceback" not in done.stderr  # bad input, one line
    assert done.stdout.rstrip().endswith("missing.py: no such file; pass the path of your submission.py")
