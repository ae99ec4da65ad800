"""The parent's own Triton kernels (the input draws, the reference, the check) cached where its
workers may read them.

A worker compiles the draws' kernels before its file comes (harness/worker/compile_ahead.py). The
parent compiles the same kernels for its own draws, so where a worker can read the parent's Triton
cache it finds them there and compiles nothing: on the H100 the step took 0.8-1.1 s in most runs,
against 1.95-2.6 s where it compiled (docs/results.md run 24; Triton's import and cache key remain).
A root evaluator's workers run as uid 65534 and cannot read root's
~/.triton (0700), so ``enable``, a step of ``python -m harness``, keeps the parent's Triton cache in the
harness's cache folder (``<cache home>/triton``, 0755) unless TRITON_CACHE_DIR names one, and names it
to the workers (``HARNESS_KERNELS``) where it is the evaluator's own and no one else may write it.
A worker only reads it: a kernel it misses there fails at once on the write it may not make, and the
worker compiles into its own folder instead. The folder holds the harness's kernels only: no
submission is compiled in the parent, and no seed is a compile-time constant of a draw kernel.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.contract.cache_home import HARNESS_KERNELS, cache_home, evaluators_folder


def enable() -> Path | None:
    """The parent's Triton cache, made in the harness's cache folder where TRITON_CACHE_DIR names none;
    returned (and named to the workers) where they may read it, else None."""
    chosen = os.environ.get("TRITON_CACHE_DIR")
    folder = Path(chosen) if chosen else cache_home() / "triton"
    if not evaluators_folder(folder, make=not chosen):
        return None
    os.environ["TRITON_CACHE_DIR"] = str(folder)
    os.environ[HARNESS_KERNELS] = str(folder)
    return folder
