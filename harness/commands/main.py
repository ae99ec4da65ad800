"""``python -m harness COMMAND``: one entry point; each command lives in its own module.

A command module exposes ``register(subparsers)``, which adds its parser and sets
``handler(args) -> int`` (the exit code) as the parser's default.
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn

from harness import __version__
from harness.contract.results import ExitCode
from harness.contract.task_spec import contest_problems, list_problems
from harness.judge.worker_link import host_share

COMMAND_MODULES = tuple(f"harness.commands.{name}_command" for name in (
    "new", "eval", "history", "compare", "sol", "calibrate", "leaderboard", "review", "serve", "submit", "user"))


def version_line() -> str:
    """The harness's, torch's (and its CUDA's) and Python's versions: what a bug report needs."""
    import torch

    cuda = f"CUDA {torch.version.cuda}" if torch.version.cuda else "no CUDA"
    return f"nvfp4-harness {__version__} (torch {torch.__version__}, {cuda}, Python {platform.python_version()})"


class _Version(argparse.Action):
    """--version, with torch's version looked up only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the harness's and torch's versions and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(version_line())
        parser.exit()


DESCRIPTION = ("Check, time and rank GPU kernel submissions for the problems under problems/ (listed below): "
               "a contest submission.py runs unchanged, on a GPU or, for correctness, on the CPU.")
EPILOG = """\
a contestant's day:
  new PROBLEM [PATH]          start from the problem's template (default ./submission.py)
  eval FILE                   check every test shape, then time every benchmark shape
                              (--mode test|benchmark|profile|sanitize, --verbose, --json FILE)
  history [PROBLEM]           the runs eval kept for you
  compare A B                 two runs per shape (history ids or --json files)
  sol PROBLEM                 the speed-of-light table; calibrate: this GPU's measured rates
  submit FILE                 send it to a contest service and wait for its report
the organizer:
  leaderboard                 rank every file under submissions/ (--cluster for several GPUs)
  review [--top N]            re-check the top entries before prizes: verdict and flags per entry
  serve, user add|list|revoke the submission service and its users

""" + textwrap.fill("exit codes: " + ", ".join(f"{int(code)} {code.name.lower().replace('_', ' ')}"
                                             for code in ExitCode), width=96, subsequent_indent="  ") + """
'python -m harness COMMAND --help' says more about each."""


def problems_text() -> str:
    """The problems, read from problems/ when help is printed (each task.yml is parsed: 0.2 s)."""
    contest = contest_problems()
    harness_checks = [name for name in list_problems() if name not in contest]
    text = textwrap.fill("problems: " + ", ".join(contest), width=96, subsequent_indent="  ")
    if harness_checks:
        text += f"\n  (the harness's own calibration, never ranked: {', '.join(harness_checks)})"
    return text


class _Parser(argparse.ArgumentParser):
    """Bad command lines exit with the harness's bad-input code (113), not argparse's 2. A parser's
    ``lazy_epilog`` is read only when its help is printed (the problem list costs a parse of every task.yml)."""

    lazy_epilog: Callable[[], str] | None = None

    def format_help(self) -> str:
        if self.lazy_epilog is not None:
            self.epilog = self.lazy_epilog()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(int(ExitCode.BAD_INPUT), f"{self.prog}: error: {message}\n")


def modules_for(argv: list[str]) -> tuple[str, ...]:
    """The command modules a command line needs: only its command's, where it names one, so that
    `eval` does not import the service's, the leaderboard's or the review's libraries (fastapi,
    jinja2, requests: issue 33); every module for the top-level help or a line naming none."""
    named = f"harness.commands.{argv[0]}_command" if argv and not argv[0].startswith("-") else None
    return (named,) if named in COMMAND_MODULES else COMMAND_MODULES


def build_parser(modules: tuple[str, ...] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness", description=DESCRIPTION,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.lazy_epilog = lambda: problems_text() + "\n\n" + EPILOG
    parser.add_argument("--version", action=_Version)
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(modules_for(argv))
    args = parser.parse_args(argv)
    try:  # a bad share is named once here, not as a traceback from inside an evaluation
        host_share.evaluations_on_host()
    except host_share.ShareError as error:
        parser.error(str(error))
    return int(args.handler(args))

