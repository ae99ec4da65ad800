"""The contest runner's own modules as a submission beside them sees them: task, reference, utils.

In the contest's folder ``task.py``, ``reference.py`` and ``utils.py`` sit next to submission.py,
and real submissions import all three (``from reference import generate_input``,
``from utils import make_match_reference``). "reference" means three things in this project, kept
apart by name: the NVFP4 library (the top-level ``reference`` package), a problem's functions
(``problems/<p>/reference.py``, the "problem module" here) and, inside the worker only, the
contest's ``reference`` module a submission imports: ``contest_reference``, the library package
plus the problem module's functions, registered as ``reference``. Nothing here is trusted: the
parent never uses these modules to judge a result.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

from problems.shared import contest_utils
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


def contest_reference(problem_module: types.ModuleType) -> types.ModuleType:
    """The contest's ``reference`` module: the NVFP4 library package with the problem module's
    functions (and the contest reference.py's helpers) added."""
    library = importlib.import_module("reference")
    module = types.ModuleType("reference", "The NVFP4 library plus the contest's reference.py functions.")
    module.__dict__.update({k: v for k, v in vars(library).items() if k not in ("__name__", "__doc__")})
    module.__dict__.update({name: getattr(problem_module, name) for name in PROBLEM_FUNCTIONS})
    module.__dict__.update(ceil_div=ceil_div, to_blocked=to_blocked, sf_vec_size=BLOCK_SIZE)
    return module


def install(problem_module: types.ModuleType, task_py: Path) -> None:
    """Register task, utils and the contest's reference before the submission is imported."""
    load_module("task", task_py)
    load_module("utils", Path(contest_utils.__file__))  # named 'utils' in messages, as in the contest
    sys.modules["reference"] = contest_reference(problem_module)
