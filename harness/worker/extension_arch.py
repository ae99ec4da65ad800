"""Refuse, before nvcc runs, a CUDA extension built only for GPUs other than this one.

Contest files often build CUDA C++ with ``torch.utils.cpp_extension.load_inline`` for sm_100a
only. On a Hopper GPU nvcc then spends 30 to 70 s building an image that cannot load (the H100
runs of docs/results.md, run 7). The worker wraps ``load_inline`` and ``load`` before the import:
when every architecture the call asks for (nvcc's ``-arch``/``-gencode`` flags, else
``TORCH_CUDA_ARCH_LIST``) is one this GPU cannot run, it raises at once with the line the build
would have ended in ("no kernel image is available"), which ``harness.judge.verdict.hardware_verdict`` turns into the
``unsupported`` verdict. A call that names no architecture builds for this GPU and is left alone,
and so is one without CUDA sources (nvcc never runs) or whose arch list holds a name this module
does not read ("Hopper"): when in doubt, the build goes ahead. This speeds a verdict; it guards
nothing (the submission could call nvcc itself).
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

ARCH = re.compile(r"\b(?:sm|compute)_(\d+)([af]?)\b")
ARCH_LIST_ENTRY = re.compile(r"^(\d+)\.(\d+)([af]?)(?:\+PTX)?$")


def requested(flags: Iterable[str], arch_list: str | None) -> list[tuple[int, str]]:
    """(architecture number, suffix) pairs a build asks for: nvcc flags first, else the arch list."""
    found = [(int(number), suffix) for flag in flags for number, suffix in ARCH.findall(str(flag))]
    if found or not arch_list:
        return found
    entries = [ARCH_LIST_ENTRY.match(entry) for entry in re.split(r"[;\s]+", arch_list) if entry]
    if not all(entries):  # a name such as "Hopper": we cannot tell what it builds, so claim nothing
        return []
    return [(int(m.group(1)) * 10 + int(m.group(2)), m.group(3)) for m in entries if m]


def runs_on(target: tuple[int, str], device: int) -> bool:
    """Whether code built for ``target`` can run on a GPU of compute capability ``device`` (e.g. 90).

    Arch-specific targets (sm_100a) run only on that architecture, family targets (sm_100f) on its
    major version; plain ones on the same major version or, as PTX, any later one.
    """
    number, suffix = target
    if suffix == "a":
        return number == device
    if suffix == "f":
        return number // 10 == device // 10 and number <= device
    return number <= device


def refusal(flags: Iterable[str], arch_list: str | None, device: int) -> str | None:
    """Why such a build cannot load here, or None when some requested target runs on this GPU."""
    targets = requested(flags, arch_list)
    if not targets or any(runs_on(target, device) for target in targets):
        return None
    names = ", ".join(sorted({f"sm_{number}{suffix}" for number, suffix in targets}))
    return (f"no kernel image is available for execution on the device: the extension is built only for "
            f"{names} and this GPU is sm_{device} (refused before nvcc ran)")


def builds_cuda(arguments: dict[str, Any]) -> bool:
    """Whether nvcc would run: load_inline with cuda_sources, or load with a .cu source."""
    if arguments.get("cuda_sources"):
        return True
    sources = arguments.get("sources") or []
    return any(str(source).endswith((".cu", ".cuh")) for source in ([sources] if isinstance(sources, str) else sources))


def _guarded(build: Callable[..., Any], device: int) -> Callable[..., Any]:
    signature = inspect.signature(build)

    @functools.wraps(build)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            arguments = signature.bind_partial(*args, **kwargs).arguments
        except TypeError:  # let torch report the bad call itself
            return build(*args, **kwargs)
        if builds_cuda(arguments):
            reason = refusal(list(arguments.get("extra_cuda_cflags") or []), os.environ.get("TORCH_CUDA_ARCH_LIST"),
                             device)
            if reason:
                raise RuntimeError(reason)
        return build(*args, **kwargs)

    return checked


def install(device: int) -> None:
    """Wrap torch's extension builders for a GPU of compute capability ``device`` (e.g. 90)."""
    from torch.utils import cpp_extension

    for name in ("load_inline", "load"):
        setattr(cpp_extension, name, _guarded(getattr(cpp_extension, name), device))
