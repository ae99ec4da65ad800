"""``python -m harness``: one line, not a traceback, when this Python lacks the harness's own
dependencies (a newcomer's `make eval` with a Python that `make install` did not set up)."""

import sys

DECLARED = {"torch", "yaml", "numpy", "jinja2", "rich", "requests"}  # pyproject.toml's dependencies


def _run() -> int:
    from harness.cli import main

    return main()


try:
    code = _run()
except ModuleNotFoundError as error:
    if error.name not in DECLARED:
        raise
    sys.exit(f"error: {error.name} is not installed for {sys.executable}: run `make install` with this Python "
             f"(or pip install -e '.[test]'), or run the Python you installed into")
sys.exit(code)
