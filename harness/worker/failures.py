"""In the worker: whatever the submission raised, turned into one status and one line for the parent."""

from __future__ import annotations

import inspect
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from harness.contract.protocol import tail
from harness.contract.results import Status
from harness.contract.submission_file import source_caret
from harness.worker import contest_modules


class SubmissionError(Exception):
    """Raised inside the worker to report a classified failure to the parent (``kind``: one of
    ``harness.contract.messages.WORKER_FAILURES``); ``traceback`` is the full text of what the
    submission raised (empty for the harness's own verdicts)."""

    def __init__(self, kind: Status, message: str, traceback: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.traceback = traceback


def traceback_text(error: BaseException) -> str:
    """The error's traceback as Python prints it, cut to its last ``TRACEBACK_CHARS`` characters."""
    return tail("".join(traceback.format_exception(type(error), error, error.__traceback__)))


def _library_path(filename: str) -> str:
    """A file's path below the sys.path entry that holds it (torch/nn/functional.py), else its name."""
    path = os.path.abspath(filename)
    for root in sorted({os.path.abspath(p) for p in sys.path if p}, key=len, reverse=True):
        if path.startswith(root + os.sep):
            return path[len(root) + 1:]
    return Path(filename).name


def location(error: BaseException, own_file: str | None) -> str:
    """Where it raised, for a contestant: the deepest line of their own file and the library frame
    that raised below it, " (at submission.py:42 in custom_kernel, via torch/nn/functional.py:372)";
    the last frame when their file is not on the stack."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    own = os.path.realpath(own_file) if own_file else None
    mine = [i for i, frame in enumerate(frames) if own and os.path.realpath(frame.filename) == own]
    last = frames[-1]
    if not mine:
        return f" (at {_library_path(last.filename)}:{last.lineno})"
    frame = frames[mine[-1]]
    via = f", via {_library_path(last.filename)}:{last.lineno}" if mine[-1] < len(frames) - 1 else ""
    return f" (at {Path(frame.filename).name}:{frame.lineno} in {frame.name}{via})"


# Import names whose pip package is called something else.
PACKAGES = {"cutlass": "nvidia-cutlass-dsl (or pip install -e '.[cute]' in the harness checkout)",
            "cuda": "cuda-python", "yaml": "pyyaml", "cv2": "opencv-python"}


def _install_advice(module: str) -> str:
    top = module.split(".")[0]
    return f"pip install {PACKAGES.get(top, top)} where the harness runs, or drop the import"


def classify(error: BaseException, own_file: str | None = None) -> SubmissionError:
    """Turn whatever the submission raised into one of the statuses the parent reports, with its
    traceback; ``own_file``: the submission's path, whose deepest line the reason names."""
    if isinstance(error, SubmissionError):
        return error
    failure = _classified(error, own_file)
    failure.traceback = traceback_text(error)
    return failure


def _classified(error: BaseException, own_file: str | None) -> SubmissionError:
    text = f"{type(error).__name__}: {error}".strip()
    if isinstance(error, torch.OutOfMemoryError) or ("out of memory" in text.lower() and "cuda" in text.lower()):
        return SubmissionError(Status.CUDA_ERROR, f"CUDA out of memory: {text.splitlines()[0]}")
    # The timing core's own driver calls fail with "CUDA driver: ... (700: an illegal memory access ...)"
    # when the submission's kernel faulted: the fault is the submission's, seen at the end event.
    if ("CUDA error" in text or "cudaError" in text or "CUDA driver:" in text
            or type(error).__name__ == "AcceleratorError"):
        return SubmissionError(Status.CUDA_ERROR, text.splitlines()[0])
    if isinstance(error, SyntaxError):
        return SubmissionError(Status.BAD_INPUT, f"syntax error in {Path(error.filename or '?').name} line "
                               f"{error.lineno}: {error.msg}; fix it and run again{source_caret(error)}")
    if isinstance(error, ImportError) and error.name in contest_modules.CONTEST_MODULES:
        return SubmissionError(Status.BAD_INPUT, f"{text.splitlines()[0]}: the contest runner's {error.name} module "
                               "has no such name; define it in your submission")
    if isinstance(error, ModuleNotFoundError):
        return SubmissionError(Status.BAD_INPUT, f"{text}: {_install_advice(error.name or '')}")
    if isinstance(error, SystemExit):
        return SubmissionError(Status.CRASHED, f"the submission called sys.exit({error.code!r})")
    if isinstance(error, MemoryError):
        return SubmissionError(Status.CRASHED, "MemoryError: the submission ran out of host memory")
    first_line = headline(text) if text else type(error).__name__
    return SubmissionError(Status.CRASHED, f"{first_line}{location(error, own_file)}")


def headline(text: str) -> str:
    """An error's first line, plus the line naming the dtypes when torch refuses a _scaled_mm
    recipe (the parent tells Hopper-only from Blackwell-only recipes by it)."""
    lines = text.splitlines()
    dtypes = [line for line in lines[1:] if line.startswith("Got mat_a.dtype()")]
    return lines[0] + (f" ({dtypes[0][:300]})" if "Invalid scaling configuration" in lines[0] and dtypes else "")


def check_entry_point(kernel: Any, file_name: str) -> None:
    """custom_kernel must be a function that takes the data tuple as its one argument (a plain check
    for a clear message at import, not a guard)."""
    if kernel is None:
        raise SubmissionError(Status.BAD_INPUT, f"{file_name} defines no custom_kernel(data) function")
    if not callable(kernel):
        raise SubmissionError(Status.BAD_INPUT, f"{file_name}: custom_kernel is a {type(kernel).__name__}, not a "
                              "function; define def custom_kernel(data)")
    try:
        signature = inspect.signature(kernel)
    except (TypeError, ValueError):  # no Python signature (a builtin): the first call will tell
        return
    try:
        signature.bind(None)
    except TypeError:
        raise SubmissionError(Status.BAD_INPUT, f"{file_name}: custom_kernel{signature} must take one argument, the "
                              "data tuple: define def custom_kernel(data)") from None
