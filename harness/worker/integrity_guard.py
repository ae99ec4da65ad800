"""Detects a submission that replaced what the harness relies on inside the worker.

The timer already uses originals captured before the submission was imported
(``harness.worker.timers``); this check turns an attempt to patch them into a named rejection.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# (module, attribute path) pairs whose identity must not change while a submission runs.
WATCHED = (
    ("time", "perf_counter"),
    ("time", "time"),
    ("torch.cuda", "Event"),
    ("torch.cuda", "Event.record"),
    ("torch.cuda", "Event.elapsed_time"),
    ("torch.cuda", "Event.synchronize"),
    ("torch.cuda", "synchronize"),
    ("torch.cuda", "_sleep"),
    ("torch", "equal"),
    ("torch", "ne"),  # with stack and Tensor.any: the check that the inputs were not modified
    ("torch", "stack"),
    ("torch", "Tensor.any"),
    ("harness.worker.timers", "CudaTimer.time_call"),
    ("harness.worker.timers", "CpuTimer.time_call"),
    ("harness.contract.protocol", "send"),
    ("harness.contract.protocol", "send_message"),
    ("harness.contract.protocol", "receive_message"),
    ("harness.contract.messages", "encode"),
    ("harness.contract.protocol", "receive"),
    ("harness.contract.protocol", "tensor_to_wire"),
    ("harness.worker.serve_loop", "Worker.call"),
    ("harness.worker.serve_loop", "Worker.send"),
    ("harness.worker.serve_loop", "Worker.serve"),
    ("os", "write"),
    ("os", "read"),
    ("json", "dumps"),  # encodes the result header: a patched one rewrites the reported times
    # Tensor methods the worker calls on an output after the timer stopped (snapshot, checks, the
    # wire copy): a patched one would do the submission's work there, untimed.
    ("torch", "Tensor.clone"),
    ("torch", "Tensor.detach"),
    ("torch", "Tensor.contiguous"),
    ("torch", "Tensor.view"),
    ("torch", "Tensor.to"),
    ("torch", "Tensor.numpy"),
    ("torch", "Tensor.untyped_storage"),
)


def _lookup(module: ModuleType, path: str) -> object:
    target: object = module
    for part in path.split("."):
        target = getattr(target, part)
    return target


class IntegrityGuard:
    """Remembers the identity of every watched object; ``violations()`` names what changed."""

    def __init__(self, extra_modules: tuple[ModuleType, ...] = ()) -> None:
        # The objects themselves, not their id(): a replaced original that is freed could hand
        # its id to the replacement.
        self._expected = {(m, p): _lookup(importlib.import_module(m), p) for m, p in WATCHED}
        # Module globals of the harness's own worker code: replacing a helper there is tampering too.
        self._globals = {module.__name__: dict(vars(module)) for module in extra_modules}
        self._modules = extra_modules

    def violations(self) -> list[str]:
        changed = []
        missing = object()
        for (module_name, path), original in self._expected.items():
            try:
                current = _lookup(importlib.import_module(module_name), path)
            except AttributeError:
                current = missing
            if current is not original:
                changed.append(f"{module_name}.{path}")
        for module in self._modules:
            before = self._globals[module.__name__]
            now = vars(module)
            changed += [f"{module.__name__}.{name}" for name, value in before.items() if now.get(name) is not value]
        return changed
