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
"""

from __future__ import annotations

import importlib.util
import os
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
