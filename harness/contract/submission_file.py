"""A submission file as the harness sees it before running it: hash, directives, syntax.

Nothing here executes the file: ``ast.parse`` finds syntax errors, so a broken file gets one
clear line without a worker ever starting.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from harness.contract import python_ast

DIRECTIVE = re.compile(r"^#!POPCORN[ \t]+(\w+)[ \t]+(\S[^\r\n]*?)[ \t\r]*$", re.MULTILINE)  # CRLF files too


def directives(text: str) -> dict[str, str]:
    """The file's '#!POPCORN <key> <value>' lines, keys lower-cased (the last of a key wins)."""
    return {key.lower(): value for key, value in DIRECTIVE.findall(text)}


class SubmissionFileError(Exception):
    """The file cannot be evaluated; the message says why and what to do."""


@dataclass(frozen=True)
class SubmissionFile:
    path: Path
    sha256: str
    leaderboard: str | None  # from '#!POPCORN leaderboard <problem>'
    author: str | None  # from '#!POPCORN author <name>'


def parse_source(source: bytes, name: str) -> str:
    """The file's text once it is UTF-8 Python that parses (never executed); else one line saying why.

    Shared by `harness eval` and the service's upload check, so both refuse the same files alike.
    """
    try:
        text = source.decode("utf-8-sig")  # a byte-order mark, as some editors write, is fine for Python
        python_ast.parse(text, filename=name)
    except UnicodeDecodeError:
        raise SubmissionFileError(f"{name}: not UTF-8 text; save it as UTF-8") from None
    except SyntaxError as error:
        raise SubmissionFileError(f"{name}: syntax error at line {error.lineno}: {error.msg}; fix it and run again"
                                  + source_caret(error)) from None
    except ValueError as error:  # a null byte, before Python 3.11.4
        raise SubmissionFileError(f"{name}: not valid Python: {error}") from None
    except (RecursionError, MemoryError):  # the parser's own depth limits: a tiny file can reach them
        raise SubmissionFileError(f"{name}: too deeply nested to parse: split the nested expression into several "
                                  "statements") from None
    return text


def source_caret(error: SyntaxError) -> str:
    """The offending line and a caret under the spot Python points at, as two indented lines after
    the message ('' when Python gave no text)."""
    text = (error.text or "").rstrip("\r\n")
    stripped = text.lstrip()
    if not stripped:
        return ""
    offset = error.offset or 1
    same_line = error.end_lineno in (None, error.lineno)
    end = error.end_offset if same_line and (error.end_offset or 0) > offset else offset + 1
    indent = len(text) - len(stripped)
    carets = "^" * max(1, min(end, len(text) + 1) - offset)
    return f"\n    {stripped[:200]}\n    {' ' * max(0, offset - 1 - indent)}{carets}"


def leaderboard_problem(leaderboard: str | None, problems: Iterable[str]) -> str | None:
    """The problem that a file's '#!POPCORN leaderboard' name runs.

    The contest ran each problem on several leaderboards and its files name them as they were
    submitted ('nvfp4_dual_gemm', 'modal_nvfp4_dual_gemm', 'final_nvfp4_dual_gemm'), so a name is
    its problem's or ends in '_' and a problem's name (the longest, should two fit). Any other name
    comes back unchanged, for the caller's 'unknown problem' line.
    """
    if not leaderboard:
        return None
    known = list(problems)
    if leaderboard in known:
        return leaderboard
    endings = [problem for problem in known if leaderboard.endswith(f"_{problem}")]
    return max(endings, key=len) if endings else leaderboard


def agreed_problem(asked: str | None, declared: str | None, name: str, problems: Iterable[str]) -> str | None:
    """The problem to run: the one asked for, else the one the file's '#!POPCORN leaderboard' line
    names (``leaderboard_problem``); one line naming both when the two disagree (a file written for
    another problem fails every check)."""
    meant = leaderboard_problem(declared, problems)
    if asked and meant and asked != meant:
        raise SubmissionFileError(f"{name}: its '#!POPCORN leaderboard {declared}' line and the problem asked for, "
                                  f"{asked}, disagree; fix the line or ask for {meant}")
    return asked or meant


def read_submission(path: str | Path) -> SubmissionFile:
    path = Path(path)
    if path.is_dir():
        raise SubmissionFileError(f"{path}: is a folder; pass the path of your submission .py file")
    if not path.is_file():
        raise SubmissionFileError(f"{path}: no such file; pass the path of your submission.py")
    if path.suffix != ".py":
        raise SubmissionFileError(f"{path}: not a .py file; Python imports only .py files: rename it to "
                                  f"{path.with_suffix('.py').name}")
    source = path.read_bytes()
    text = parse_source(source, str(path))
    lines = directives(text)
    return SubmissionFile(
        path=path.resolve(),
        sha256=hashlib.sha256(source).hexdigest(),
        leaderboard=lines.get("leaderboard"),
        author=lines.get("author"),
    )
