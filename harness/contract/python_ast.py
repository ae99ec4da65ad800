"""Every ``ast.parse`` of the harness, one at a time.

CPython 3.11 keeps the AST constructor's recursion count in state that threads share: a thread
switch inside one parse (a garbage collection that runs a finalizer is enough) lets another
thread's parse move the count, and the first fails with "SystemError: AST constructor recursion
depth mismatch" (python/cpython#106905). The service, the cluster and the adversarial suite judge
submissions on several threads, and a file's syntax check is an ``ast.parse``: CI hit it on
2026-11-28. Parses are short, so one process-wide lock costs nothing worth measuring.
"""

from __future__ import annotations

import ast
import threading

_PARSE_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse``, never concurrently with another parse through this function."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename, mode=mode)
