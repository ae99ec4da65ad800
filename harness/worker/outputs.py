"""In the worker: what a call returned, accepted only as plain tensors, and the checks on them.

Only exact ``torch.Tensor``, ``list`` and ``tuple`` objects pass: a subclass's methods would run
the submission's code inside the harness after the timer stopped.
"""

from __future__ import annotations

from typing import Any

import torch

from harness.contract.results import Status
from harness.contract.tensor_tree import tensors_in
from harness.worker.failures import SubmissionError

BUFFER_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def operand_tensors(data: Any) -> list[torch.Tensor]:
    """The inputs a call must neither change nor return: every tensor but the output buffers.

    By the problems' convention (problems.shared.blockscaled.poisoned_output) an output buffer is drawn
    filled with NaN, so that unwritten elements show; the rule needs no list per problem.
    """
    tensors = tensors_in(data)
    candidates = [t for t in tensors if t.dtype in BUFFER_DTYPES]
    # One reduction per candidate, read back together: one wait for the GPU, not one per tensor.
    poisoned = torch.stack([t.isnan().all() for t in candidates]).tolist() if candidates else []
    buffers = {id(t) for t, flag in zip(candidates, poisoned) if flag}
    return [t for t in tensors if id(t) not in buffers]


def changed_any(pristine: list[torch.Tensor], operands: list[torch.Tensor]) -> bool:
    """Whether any operand's bytes differ from its copy taken before the call (one read-back for all)."""
    now = [bytes_of(t) for t in operands]
    if any(a.shape != b.shape for a, b in zip(pristine, now)):  # resized in place
        return True
    return bool(torch.stack([torch.ne(a, b).any() for a, b in zip(pristine, now)]).any()) if now else False


def dense_on(device: torch.device, tensors: list[torch.Tensor]) -> None:
    """Raise unless every output is a dense tensor on the run's device (the core copies raw storage:
    a sparse tensor has none it can read, a meta tensor no memory at all)."""
    for tensor in tensors:
        if tensor.layout != torch.strided:
            raise SubmissionError(Status.FAILED, f"custom_kernel returned a tensor of layout {tensor.layout}; return a "
                                  "dense (strided) tensor")
        if tensor.device.type != device.type:
            raise SubmissionError(Status.FAILED, f"custom_kernel returned a tensor on {tensor.device.type}; return it "
                                  f"on {device.type}, where its inputs are")


def output_tensors(result: Any, device: torch.device) -> tuple[str, list[torch.Tensor]]:
    """('tensor' | 'list', tensors) for a well-formed output; raise for anything else.

    Only exact ``torch.Tensor``, ``list`` and ``tuple`` objects pass, checked by type before
    anything touches them: a subclass's methods (``__torch_function__``, ``__iter__``) would run
    the submission's code inside the harness, after the timer stopped (deferred work).
    """
    if type(result) in (list, tuple):
        items = list(result)  # an exact list or tuple: iterating it runs no submission code
    elif isinstance(result, (list, tuple)):
        raise SubmissionError(Status.REJECTED, f"custom_kernel returned a {type(result).__name__}, a list/tuple "
                              "subclass whose methods could do work after the timer stopped; return a plain list")
    else:
        items = [result]
    for item in items:
        if isinstance(item, torch.Tensor) and type(item) is not torch.Tensor:
            raise SubmissionError(Status.REJECTED, f"custom_kernel returned a {type(item).__name__}, a torch.Tensor "
                                  "subclass whose methods could do work after the timer stopped; return a plain "
                                  "torch.Tensor")
    if type(result) is torch.Tensor:
        dense_on(device, [result])
        return "tensor", [result]
    if type(result) in (list, tuple) and all(type(t) is torch.Tensor for t in items):
        dense_on(device, items)
        return "list", items
    kind = type(result).__name__
    if type(result) in (list, tuple):
        kind = f"a {kind} holding " + ", ".join(sorted({type(t).__name__ for t in items}))
    raise SubmissionError(Status.FAILED, f"custom_kernel returned {kind}, expected a tensor or a list of tensors")


def active_modes() -> list[str]:
    """Torch function / dispatch modes left active, a default-device context (DeviceContext, which
    torch.set_default_device pushes) included.

    A mode runs on every torch call anyone makes, the harness's copy of the output and its draw of
    the next inputs included: it would do the submission's work after the timer stopped, or watch
    the inputs before it starts. DeviceContext calls module globals of torch.utils._device that a
    submission can replace, so it is no exception.
    """
    modes = [torch._C._get_function_stack_at(i) for i in range(torch._C._len_torch_function_stack())]
    names = [f"TorchFunctionMode {type(m).__name__}" for m in modes]
    if torch._C._len_torch_dispatch_stack():
        names.append("TorchDispatchMode")
    return names


Span = tuple[torch.device, int, int]


def _storage_span(t: torch.Tensor) -> Span:
    """(device, first byte, end) of the whole storage under ``t``."""
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return t.device, start, start + storage.nbytes()


def storage_spans(tensors: list[torch.Tensor]) -> list[Span]:
    """The storages under the non-empty ``tensors``, for ``any_shares_memory`` (a drawn call's operands keep
    theirs for the worker's life: drawn_inputs.Draw)."""
    return [_storage_span(t) for t in tensors if t.numel()]


def any_shares_memory(outputs: list[torch.Tensor], spans: list[Span]) -> bool:
    """Whether a non-empty output's storage overlaps one of the operands' storages (``storage_spans``) on the
    same device. Each storage is read once, not once per pair of tensors: on the grouped GEMM (8 outputs,
    every group's operands) the worker's `checks` read about 0.9 ms a call in docs/results.md run 23, against
    0.12-0.2 on the one-output problems."""
    for out in outputs:
        if out.numel():
            device, start, end = _storage_span(out)
            if any(device == other and start < other_end and other_start < end
                   for other, other_start, other_end in spans):
                return True
    return False


def bytes_of(t: torch.Tensor) -> torch.Tensor:
    """Raw bytes of a tensor: compares NaNs and fp4/fp8 data exactly, on any device."""
    return t.detach().contiguous().view(-1).view(torch.uint8)
