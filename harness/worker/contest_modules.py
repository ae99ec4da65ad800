"""The contest runner's own modules as a submission beside them sees them: task, reference, utils.

In the contest's folder ``task.py``, ``reference.py`` and ``utils.py`` sit next to submission.py,
and real submissions import all three (``from reference import generate_input``,
``from utils import make_match_reference``). This project's top-level ``reference`` package is its NVFP4
library, so inside the worker (only there) the name ``reference`` becomes an overlay: the library
package, plus the problem's contest functions. Nothing here is trusted: the parent never uses
these modules to judge a result.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

from problems import contest_utils
from reference.formats import BLOCK_SIZE
from reference.layouts import ceil_div, to_blocked

PROBLEM_FUNCTIONS = ("generate_input", "ref_kernel", "check_implementation")
CONTEST_MODULES = ("task", "reference", "utils")


def load_module(name: str, path: Path) -> types.ModuleType:
    """Import the file at ``path`` under ``name`` (registered in sys.modules first, as import does)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def reference_overlay(problem: types.ModuleType) -> types.ModuleType:
    """The project's ``reference`` package with the contest reference.py's names added."""
    library = importlib.import_module("reference")
    overlay = types.ModuleType("reference", "The NVFP4 library plus the contest's reference.py functions.")
    overlay.__dict__.update({k: v for k, v in vars(library).items() if k not in ("__name__", "__doc__")})
    overlay.__dict__.update({name: getattr(problem, name) for name in PROBLEM_FUNCTIONS})
    overlay.__dict__.update(ceil_div=ceil_div, to_blocked=to_blocked, sf_vec_size=BLOCK_SIZE)
    return overlay


def install(problem: types.ModuleType, task_py: Path) -> None:
    """Register task, utils and the reference overlay before the submission is imported."""
    load_module("task", task_py)
    load_module("utils", Path(contest_utils.__file__))  # named 'utils' in messages, as in the contest
    sys.modules["reference"] = reference_overlay(problem)
