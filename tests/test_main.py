"""python -m harness with a Python that lacks a module the harness imports: one line, not a traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

HIDE = ("import runpy, sys; sys.modules[{module!r}] = None; sys.argv = ['harness', *{argv!r}]; "
        "runpy.run_module('harness', run_name='__main__')")


@pytest.mark.parametrize(("module", "argv", "hint"), [
    ("torch", ["sol", "nvfp4_gemv"], "make install"),
    ("uvicorn", ["serve", "--db", "{tmp}/s.db", "--device", "cpu", "--same-user-workers"], ".[service]"),
])
def test_a_missing_dependency_is_one_line_naming_the_install(tmp_path, module, argv, hint):
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    done = subprocess.run([sys.executable, "-c", HIDE.format(module=module, argv=argv)], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[1])
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {module} is not installed for") and hint in lines[0]
