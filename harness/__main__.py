"""``python -m harness``: one line, not a traceback, when this Python lacks a module the harness
imports (a newcomer's `make eval` with a Python that `make install` did not set up, or `serve`
without the service extra). A submission's own imports fail in its worker, not here. Its first step
keeps Python's bytecode in the harness's cache where the environment keeps none (harness/bytecode_cache.py),
and its own Triton kernels where its workers may read them (harness/kernel_cache.py)."""

import sys

from harness import kernel_cache
from harness.bytecode_cache import enable as enable_bytecode_cache
from harness.process_exit import exit_now

EXTRAS = {"fastapi": "service", "starlette": "service", "uvicorn": "service", "multipart": "service",
          "distributed": "cluster", "dask": "cluster"}  # pyproject.toml's optional dependencies


def _install_hint(module: str) -> str:
    extra = EXTRAS.get(module)
    if extra:
        return f"pip install -e '.[{extra}]' (the {extra} extra) with this Python"
    return "run `make install` with this Python (or pip install -e '.[test]'), or run the Python you installed into"


def _run() -> int:
    from harness.execution.local_cluster import start_ahead_for_command
    from harness.judge.worker_link.blank_workers import prestart_for_command

    prestart_for_command(sys.argv[1:])  # `eval`'s worker starts now, beside the imports below (issue 33)
    start_ahead_for_command(sys.argv[1:])  # and `--cluster local`'s workers (issue 35)
    from harness.commands.main import main

    return main()


enable_bytecode_cache()  # before torch's import: its bytecode, where the environment keeps none (run 24)
kernel_cache.enable()  # before the workers start: the parent's Triton cache, where they may read it
try:
    code = _run()
except ModuleNotFoundError as error:
    name = (error.name or "").split(".")[0]
    sys.exit(f"error: {name or error} is not installed for {sys.executable}: {_install_hint(name)}")
exit_now(code)  # without the interpreter's teardown of torch (0.7-1 s): harness/process_exit.py
