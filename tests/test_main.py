"""python -m harness with a Python that lacks a module the harness imports: one line, not a traceback."""

import re
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


def test_the_top_level_help_describes_the_harness_and_lists_every_command(capsys):
    from harness.commands.main import COMMAND_MODULES, build_parser
    from harness.contract.task_spec import list_problems

    text = build_parser().format_help()
    assert "Check, time and rank GPU kernel submissions" in text and "``" not in text
    # Every problem folder is listed (from problems/, not a hard-coded four), calibration ones apart.
    listed = " ".join(text[text.index("problems: "):text.index("a contestant's day:")].split())
    assert all(name in listed for name in list_problems())
    assert "never ranked: timing_ladder" in listed and "timing_ladder" not in listed.split("(")[0]
    epilog = text[text.index("a contestant's day:"):]
    names = [module.rsplit(".", 1)[1].removesuffix("_command") for module in COMMAND_MODULES]
    assert [name for name in names if not re.search(rf"\b{name}\b", epilog)] == []
    assert "112 check failed" in epilog and "114 timeout" in epilog


def test_eval_imports_only_its_own_command_and_none_of_the_service_libraries():
    """`harness eval`'s parent imports what its path needs before the first test (issue 33): the
    service's, the leaderboard pages' and the review's libraries stay out."""
    probe = ("import sys; from harness.commands.main import build_parser, modules_for; "
             "build_parser(modules_for(['eval', 'x.py'])); "
             "print(' '.join(m for m in ('fastapi', 'uvicorn', 'jinja2', 'requests', 'dask', 'distributed', "
             "'kernelguard', 'triton', 'harness.service.client', 'harness.leaderboard.render', "
             "'harness.review.entry_review') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []


def test_a_command_line_naming_no_known_command_still_gets_every_command():
    from harness.commands.main import COMMAND_MODULES, modules_for

    assert modules_for(["eval", "f.py"]) == ("harness.commands.eval_command",)
    assert modules_for(["--version"]) == modules_for([]) == modules_for(["evil"]) == COMMAND_MODULES
