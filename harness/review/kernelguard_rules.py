"""GPU MODE's kernelguard (MIT; the rule set its contests run) over one file, its matches as our flags.

Which matches count: those of a rule mapped to one of our classes below, and any other rule whose
own policy auto-filters (kernelguard's "hard" evidence), under the class ``kernelguard``. Its
telemetry-only rules about which library computes the product (SCALED_MM_REF, DECODE_MM_REF,
PRECISION_DOWNGRADE, TRUSTED_MODULE_IMPORT) are left out: this harness judges the product by its
output and its time, and the shipped vendor yardstick calls torch._scaled_mm on purpose.
kernelguard reports no line; the flag takes the first line of the file holding a name its evidence
quotes (``torch.cuda.Event.elapsed_time``), else none.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from types import ModuleType

from harness.review.findings import Flag, FlagClass, flag_at

CLASSES: dict[str, FlagClass] = {
    "TIMER_MONKEYPATCH": FlagClass.MONKEYPATCH,
    "TORCH_VALIDATION_MONKEYPATCH": FlagClass.MONKEYPATCH,
    "TENSOR_INSTANCE_METHOD_OVERRIDE": FlagClass.MONKEYPATCH,
    "HARNESS_RUNTIME_PATCHING": FlagClass.MONKEYPATCH,
    "MODULE_MUTATION": FlagClass.MONKEYPATCH,
    "GLOBALS_MUTATION": FlagClass.PYTHON_REACH,
    "GLOBALS_ACCESS": FlagClass.PYTHON_REACH,
    "SYS_MODULES_ACCESS": FlagClass.PYTHON_REACH,
    "FRAME_WALK_ACCESS": FlagClass.PYTHON_REACH,
    "FRAME_WALK_MUTATION": FlagClass.PYTHON_REACH,
    "CODE_ACCESS": FlagClass.PYTHON_REACH,
    "CODE_REPLACEMENT": FlagClass.PYTHON_REACH,
    "EVALUATOR_EXPLOIT": FlagClass.PYTHON_REACH,
    "THREAD_INJECTION": FlagClass.PROCESS_TRICKS,
    "RUNTIME_PACKAGE_INSTALL": FlagClass.PROCESS_TRICKS,
    "UNSYNC_MULTISTREAM": FlagClass.STREAMS_GRAPHS,
    "CUDA_GRAPH_REPLAY": FlagClass.STREAMS_GRAPHS,
    "CUDA_GRAPH_PYTHON": FlagClass.STREAMS_GRAPHS,
    "SEQUENCE_BATCH_GRAPH": FlagClass.STREAMS_GRAPHS,
    "PARTIAL_GRAPH_KEY": FlagClass.STREAMS_GRAPHS,
    "LAZY_TENSOR": FlagClass.STREAMS_GRAPHS,
    "CUDA_EVENT_DISABLE_TIMING": FlagClass.STREAMS_GRAPHS,
    "POINTER_REPLAY": FlagClass.POINTER_CACHE,
    "OUTPUT_REPLAY_CACHE": FlagClass.POINTER_CACHE,
    "OBFUSCATED_EXEC": FlagClass.OBFUSCATION,
    "DYNAMIC_EXECUTION": FlagClass.OBFUSCATION,
    "MODULE_RELOAD": FlagClass.OBFUSCATION,
    "TOKEN_PASTE_CUDA_API": FlagClass.OBFUSCATION,
}
"""kernelguard rule -> our class; other rules count only when kernelguard itself auto-filters on them."""

QUOTED_NAME = re.compile(r"[A-Za-z_][\w.]*\w(?:\(\w*\))?")


def load() -> ModuleType | None:
    """kernelguard, or None where it is not installed (pip install 'nvfp4-harness[review]', Python 3.11+)."""
    try:
        import kernelguard
    except ImportError:
        return None
    return kernelguard


def counted(guard: ModuleType, pattern: str) -> FlagClass | None:
    """Our class for a kernelguard rule, None when it is telemetry only and outside our classes."""
    if pattern in CLASSES:
        return CLASSES[pattern]
    policy = getattr(guard, "BASE_RULE_REGISTRY", {}).get(pattern)
    return FlagClass.KERNELGUARD if policy is not None and policy.max_outcome == guard.AUTO_FILTER else None


def locate(evidence: str, lines: list[str], prose: Collection[int] = ()) -> int | None:
    """The first line of code (docstrings skipped) holding a name the evidence quotes (its last part), else None."""
    names = sorted({m.group().split(".")[-1].rstrip("()") for m in QUOTED_NAME.finditer(evidence)
                    if "." in m.group() or "(" in m.group() or "_" in m.group()}, key=len, reverse=True)
    for name in names:
        if len(name) < 3:
            continue
        for number, line in enumerate(lines, 1):
            if number not in prose and re.search(rf"\b{re.escape(name)}\b", line):
                return number
    return None


def scan(guard: ModuleType, text: str, file: str, prose: Collection[int] = ()) -> list[Flag]:
    """kernelguard's matches on one file, as flags (one per rule and evidence); ``prose``: docstring lines."""
    result = guard.analyze_code(text, compute_structural_hash=False)
    lines = text.splitlines()
    flags, seen = [], set()
    for match in result.get("matched_patterns", []):
        pattern, evidence = str(match.get("pattern", "?")), str(match.get("evidence", ""))
        klass = counted(guard, pattern)
        if klass is None or (pattern, evidence) in seen:
            continue
        seen.add((pattern, evidence))
        line = locate(evidence, lines, prose)
        flags.append(flag_at(klass, f"kernelguard {pattern}: {evidence}", file, line,
                             lines[line - 1] if line else "", rule=f"kernelguard:{pattern}"))
    return flags
