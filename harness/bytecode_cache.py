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

The first process on a fresh machine finds the folder empty and would compile as it imports, one module
at a time, while its worker (started beside its imports) compiled the same modules again: 7.6 s of start
and 9.5 s of the worker's on the H100 (run 25). Where the machine has the cores (``MIN_CORES``), ``enable``
first compiles the packages in ``PRECOMPILED`` whole, in parallel, one process per core: on 16 cores
well under the single-threaded compile of the modules one import needs.
"""

from __future__ import annotations

import compileall
import importlib.util
import os
import sys
from pathlib import Path

from harness.contract.cache_home import cache_home, evaluators_folder
from harness.judge.worker_link.host_share import host_cpus

ENV = "NVFP4_BYTECODE_CACHE"
"""The evaluator's choice of folder ("off": Python's own choice, no cache of the harness's)."""
PROBE = "torch"
"""The package whose start decides it: the one import that costs seconds."""
PRECOMPILED = ("torch", "triton")
"""The packages compiled whole on a fresh folder: what every harness process and worker imports."""
MIN_CORES = 4
"""Below this many usable cores a whole package compiles slower than the modules one import needs."""


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


def _package_folder(package: str) -> str | None:
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return locations[0] if len(locations) == 1 else None


def precompile(packages: list[str], workers: int) -> list[str]:
    """Compile each package's modules under ``sys.pycache_prefix`` now, ``workers`` processes at once,
    where its ``__init__``'s bytecode is not there yet; the packages compiled. A module that does not
    compile (a test file written for another Python) is left to the import, as before."""
    compiled = []
    for package in packages:
        location = _package_folder(package)
        init = os.path.join(location, "__init__.py") if location else None
        if init is None or not os.path.exists(init) or os.path.exists(importlib.util.cache_from_source(init)):
            continue
        compileall.compile_dir(location, quiet=2, workers=workers)
        compiled.append(package)
    return compiled


def enable(probe: str = PROBE, packages: tuple[str, ...] = PRECOMPILED) -> Path | None:
    """From here on this process writes its bytecode under the harness's cache and its children read it
    there, where ``needed``; ``packages`` it would compile from source are compiled first, in parallel,
    where this machine has ``MIN_CORES``. The folder, or None."""
    chosen = folder()
    if chosen is None or not needed(probe) or not evaluators_folder(chosen, make=True):
        return None
    uncompiled = [package for package in packages if needed(package)]
    sys.pycache_prefix = str(chosen)
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = str(chosen)
    cores = host_cpus()
    if cores >= MIN_CORES:
        precompile(uncompiled, cores)
    return chosen
