"""python -m harness with a Python that lacks the harness's dependencies: one line, not a traceback."""

import subprocess
import sys
from pathlib import Path

HIDE_TORCH = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['harness', 'sol', 'nvfp4_gemv']; "
              "runpy.run_module('harness', run_name='__main__')")


def test_a_missing_dependency_is_one_line_naming_the_install():
    done = subprocess.run([sys.executable, "-c", HIDE_TORCH], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: torch is not installed for") and "make install" in lines[0]
