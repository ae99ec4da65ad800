"""``python -m harness COMMAND``: one entry point; each command lives in its own module.

A command module exposes ``register(subparsers)``, which adds its parser and sets
``handler(args) -> int`` (the exit code) as the parser's default.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = ("harness.evaluate", "harness.sol", "harness.calibrate", "harness.leaderboard.cli")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
