"""``python -m harness new PROBLEM [PATH]``: start a submission from the problem's template.

The template is the problem's own ``submission.py`` (a plain torch baseline that passes every
check), written with the user's name on its ``#!POPCORN author`` line; an existing file is kept
unless ``--force``.
"""

from __future__ import annotations

import argparse
import getpass
import re
import sys
from pathlib import Path

from harness.contract.results import ExitCode
from harness.contract.task_spec import PROBLEMS_DIR, contest_problems

AUTHOR_LINE = re.compile(r"^#!POPCORN[ \t]+author[ \t].*$", re.MULTILINE)


def _user_name() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name here (a container without a passwd entry)
        return "your-name"


def target_path(path: str) -> Path:
    """Where the template goes: PATH, or PATH/submission.py for a folder; one line when not a .py file."""
    target = Path(path)
    if target.is_dir():
        target = target / "submission.py"
    if target.suffix != ".py":
        raise ValueError(f"{path}: not a .py file; Python imports only .py files: name it "
                         f"{target.with_suffix('.py').name}")
    return target


def _handle(args: argparse.Namespace) -> int:
    try:
        if args.problem not in contest_problems():  # a calibration problem is the harness's check, not a contest's
            raise ValueError(f"unknown problem '{args.problem}': choose one of {', '.join(contest_problems())}")
        target = target_path(args.path)
        if target.exists() and not args.force:
            raise ValueError(f"{target} exists; pass --force to overwrite it, or give another path")
        template = (PROBLEMS_DIR / args.problem / "submission.py").read_text()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(AUTHOR_LINE.sub(f"#!POPCORN author {args.author}", template, count=1))
    except (OSError, ValueError) as error:
        print(f"new: error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    print(f"wrote {target}: the {args.problem} template (a torch baseline that passes every check)")
    print(f"check it: python -m harness eval {target}")
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("new", help="write a problem's submission template to start from",
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.lazy_epilog = lambda: "problems: " + ", ".join(contest_problems())  # read when help is printed
    parser.add_argument("problem", help="a problem under problems/ (listed below)")
    parser.add_argument("path", nargs="?", default="submission.py",
                        help="file (or folder) to write (default: ./submission.py)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    parser.add_argument("--author", default=_user_name(),
                        help="the name for its '#!POPCORN author' line (default: your login name)")
    parser.set_defaults(handler=_handle)
