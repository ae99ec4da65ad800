"""``python -m harness COMMAND``: one entry point; each command lives in its own module.

A command module exposes ``register(subparsers)``, which adds its parser and sets
``handler(args) -> int`` (the exit code) as the parser's default.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from harness.contract.results import ExitCode

COMMAND_MODULES = tuple(f"harness.commands.{name}_command" for name in (
    "eval", "sol", "calibrate", "leaderboard", "serve", "submit", "user"))


class _Parser(argparse.ArgumentParser):
    """Bad command lines exit with the harness's bad-input code (113), not argparse's 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(int(ExitCode.BAD_INPUT), f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))

