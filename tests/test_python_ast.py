"""Parsing on several threads: the harness's one ``ast.parse`` holds a lock (harness/contract/python_ast.py).

CPython 3.11 shares the AST constructor's recursion count between threads (python/cpython#106905); CI
hit "SystemError: AST constructor recursion depth mismatch" when the adversarial suite checked two
files' syntax at once. The stress below makes plain ``ast.parse`` fail that way within a few parses on
CPython 3.11.7 (a garbage collection that runs a finalizer inside one parse hands the thread over);
through the lock it never does.
"""

from __future__ import annotations

import ast
import gc
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.contract import python_ast

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "".join(
    f"def f{i}(x, y=1):\n    if x and y:\n        return [(a, {i}, b.c[d]) for a in x if a for b in a]\n"
    f"    return {{'k': x, 'v': y + {i}}}\n"
    for i in range(300)
)


class _Finalized:
    """Cyclic garbage whose finalizer gives the GIL away, so a collection inside a parse switches threads."""

    def __del__(self) -> None:
        time.sleep(0)


def _parse_errors(parse: Callable[[str], object], threads: int = 6, parses: int = 6) -> list[str]:
    errors: list[str] = []

    def work() -> None:
        for _ in range(parses):
            if errors:
                return
            for _ in range(20):
                first, second = _Finalized(), _Finalized()
                first.other, second.other = second, first
            try:
                parse(SOURCE)
            except SystemError as error:
                errors.append(str(error))

    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(50, 5, 5)
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)
    return errors


def test_parses_on_several_threads_never_trip_the_recursion_count() -> None:
    assert _parse_errors(python_ast.parse) == []


def test_the_harness_parses_python_only_through_the_lock() -> None:
    """A new ``ast.parse`` elsewhere in the harness would bring the race back."""
    callers = [path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "harness").rglob("*.py"))
               if "ast.parse(" in path.read_text().replace("python_ast.parse(", "")]
    assert callers == ["harness/contract/python_ast.py"]


def test_the_parse_keeps_ast_parse_s_arguments() -> None:
    tree = python_ast.parse("1 + 2", mode="eval")
    assert isinstance(tree, ast.Expression)
    try:
        python_ast.parse("def (", filename="broken.py")
    except SyntaxError as error:
        assert error.filename == "broken.py"
    else:
        raise AssertionError("a syntax error was not raised")
