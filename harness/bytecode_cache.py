"""Python's bytecode for the harness's processes, kept in the harness's cache where the environment
forbids writing it beside the sources.

Container images often set PYTHONDONTWRITEBYTECODE=1 and ship torch without its bytecode. The H100's
does (docs/results.md run 24): there every process that imports torch compiles about 950 modules from
source, 2.4 s of a 4.8 s import, in the parent and again in every worker of a ranked run.

``enable``, the first thing ``python -m harness`` does, points Python's bytecode at
``<cache home>/bytecode`` (``sys.pycache_prefix``: nothing is written beside the sources) and lets the
parent write it there; its children inherit PYTHONPYCACHEPREFIX and read it. A worker writes none: its
environment keeps PYTHONDONTWRITEBYTECODE (harness/judge/worker_link/worker_spawn.py), its Landlock
rules grant no writes there, and as uid 65534 (a root evaluator's workers) it cannot write a root's
folder. Bytecode is code the parent runs, so the folder is used only where it is this user's and no one
else may write it: no more trust than the installed sources themselves. NVFP4_BYTECODE_CACHE=DIR moves
it, NVFP4_BYTECODE_CACHE=off leaves Python's own choice.

``warm`` (``python -m harness.warm``: ``make install`` and the GPU check's ``build`` run it) writes it
ahead, as pip writes bytecode at install time: it imports what a harness process and its workers import,
so that a machine's first ``make eval`` does not compile torch in the parent and again in its worker at
once (17.1-19.3 s against 7.6-8.8 s for the next one on the H100, docs/results.md runs 25 and 27).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from harness.contract.cache_home import cache_home, evaluators_folder

ENV = "NVFP4_BYTECODE_CACHE"
"""The evaluator's choice of folder ("off": Python's own choice, no cache of the harness's)."""
PROBE = "torch"
"""The package whose start decides it: the one import that costs seconds."""


def needed(probe: str = PROBE) -> bool:
    """Whether every start would compile ``probe`` from source: no bytecode beside its source, and
    Python would write none there (the flag set, or the folder read-only)."""
    if sys.pycache_prefix is not None:
        return False
    spec = importlib.util.find_spec(probe)
    if spec is None or not spec.has_location or not spec.origin or not spec.origin.endswith(".py"):
        return False
    if os.path.exists(importlib.util.cache_from_source(spec.origin)):
        return False
    return sys.dont_write_bytecode or not os.access(os.path.dirname(spec.origin), os.W_OK)


def folder() -> Path | None:
    """``$NVFP4_BYTECODE_CACHE``; else the harness's cache folder's ``bytecode``. None when turned off."""
    chosen = os.environ.get(ENV)
    if chosen == "off":
        return None
    return Path(chosen) if chosen else cache_home() / "bytecode"


def enable(probe: str = PROBE) -> Path | None:
    """From here on this process writes its bytecode under the harness's cache and its children read it
    there, where ``needed``; the folder, or None."""
    chosen = folder()
    if chosen is None or not needed(probe) or not evaluators_folder(chosen, make=True):
        return None
    sys.pycache_prefix = str(chosen)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(chosen)
    return chosen


WARMED = ("torch", "numpy", "triton", "triton.compiler.compiler", "triton.runtime.jit", "jinja2",
          "harness.commands.main", "harness.worker.serve_loop", "harness.worker.compile_ahead",
          "problems.shared.counter_rng", "problems.shared.draw_graph", "problems.shared.blockscaled")
"""What ``warm`` imports (with every command's module and every problem's reference): the parent's commands
and the worker's request loop, with torch and triton."""


CHILD_STARTS = ("harness.judge.worker_link.worker_reaper", "harness.worker.boot", "torch.utils.cpp_extension")
"""What a worker's two interpreters (its reaper's and its own) import as they start, and what the worker
imports ahead of its Start (torch's extension builders, which bring setuptools). Written by a child that
starts under the cache as they do: what an interpreter imports before any line of ours (``site`` and the
.pth files' hooks) is read through the cache only by one started with PYTHONPYCACHEPREFIX, never by the
parent, which enables it after its own start. Without them the H100's workers compiled about 0.25 s of
start-up modules in each interpreter and 0.4-0.5 s of torch's builders (docs/results.md run 31)."""
CHILD_LIMIT_S = 600


def harness_modules() -> list[str]:
    """``WARMED``, every command's module and every problem's reference module."""
    from harness.commands.main import COMMAND_MODULES
    from harness.contract.task_spec import list_problems, load_task

    return [*WARMED, *COMMAND_MODULES, *(load_task(problem).reference_module for problem in list_problems())]


def warm(probe: str = PROBE, modules: list[str] | None = None) -> Path | None:
    """Write the bytecode of ``modules`` (None: ``harness_modules``) where ``needed``, by importing them; the
    folder, or None where the harness keeps none (a module that is not installed is passed over)."""
    chosen = enable(probe)
    if chosen is not None:
        for name in harness_modules() if modules is None else modules:
            with contextlib.suppress(ImportError):  # an extra that is not installed (triton on some CPUs)
                importlib.import_module(name)
        warm_child_start(chosen, CHILD_STARTS if modules is None else modules)
    return chosen


def warm_child_start(chosen: Path, modules: tuple[str, ...] | list[str]) -> bool:
    """Start one interpreter under ``chosen`` that writes its bytecode there (its start-up's modules
    included) and imports ``modules``; whether it ran. A module that is not installed is passed over."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(chosen)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = ("import contextlib, importlib, sys\n"
            "for name in sys.argv[1:]:\n"
            "    with contextlib.suppress(ImportError):\n"
            "        importlib.import_module(name)\n")
    try:
        return subprocess.run([sys.executable, "-c", code, *modules], env=env, capture_output=True,
                              timeout=CHILD_LIMIT_S).returncode == 0
    except (OSError, subprocess.TimeoutExpired):  # only a slower start: the workers compile what they lack
        return False
