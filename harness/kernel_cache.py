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
from typing import Any

from harness import triton_key
from harness.contract.cache_home import HARNESS_KERNELS, TRITON_KEY, cache_home, evaluators_folder


def enable() -> Path | None:
    """The parent's Triton cache, made in the harness's cache folder where TRITON_CACHE_DIR names none;
    returned (and named to the workers) where they may read it, else None. Triton's key, where it is
    remembered there for this install (harness/triton_key.py), is named to this process and its workers;
    one named by anything else is dropped."""
    os.environ.pop(TRITON_KEY, None)
    chosen = os.environ.get("TRITON_CACHE_DIR")
    folder = Path(chosen) if chosen else cache_home() / "triton"
    if not evaluators_folder(folder, make=not chosen):
        return None
    os.environ["TRITON_CACHE_DIR"] = str(folder)
    os.environ[HARNESS_KERNELS] = str(folder)
    if key := triton_key.remembered(folder):
        os.environ[TRITON_KEY] = key
    return folder


KINDS = ("tests", "benchmarks")
"""The shapes ``warm_kernels`` runs: every test and benchmark shape of a problem (each specializes its own)."""


def warm_kernels(problems: list[str] | None = None, kinds: tuple[str, ...] = KINDS,
                 device: Any = None) -> list[str]:
    """Compile now, into the Triton cache in use (``enable``'s), the harness's own kernels a run on this GPU
    uses: each problem's input draw, reference and check on every shape of ``kinds`` (a shape specializes
    them), and the workers' draw kernels (problems/shared/draw_kernels.py). What `make install` runs on a
    GPU machine, so that a machine's first run compiles only the submission's kernels (the parent's and
    its worker's first use cost the H100's first ranked run 1.4 s of its worker's start and 2 s of its
    tests, docs/results.md run 29 call 6). ``device``: None for the first CUDA GPU ([] without one).
    Returns the problems warmed; a problem this device cannot run is passed over."""
    import importlib

    import torch

    from harness.contract.task_spec import contest_problems, load_task

    if device is None:
        if not torch.cuda.is_available():
            return []
        device = torch.device("cuda")
    if device.type == "cuda":
        from problems.shared import draw_kernels

        try:
            draw_kernels.compile_all()
        except Exception as error:  # the workers compile them at their start instead
            print(f"kernels: the workers' draw kernels not compiled ahead ({type(error).__name__}: "
                  f"{str(error).splitlines()[0] if str(error) else ''})")
    warmed = []
    for problem in contest_problems() if problems is None else problems:
        task = load_task(problem)
        reference = importlib.import_module(task.reference_module)
        try:
            for case in (case for kind in kinds for case in getattr(task, kind)):
                inputs = reference.generate_input(**case, device=device)
                # The check computes the reference itself where it takes none: the same kernels either way.
                ok, why = reference.check_implementation(inputs, reference.ref_kernel(inputs))
                if not ok:
                    raise RuntimeError(f"the reference fails its own check ({why})")
                del inputs
            warmed.append(problem)
        except Exception as error:  # this GPU lacks what the problem needs: its own first run says so
            print(f"kernels: {problem} not compiled ahead ({type(error).__name__}: {str(error).splitlines()[0]})")
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.empty_cache()
    return warmed
