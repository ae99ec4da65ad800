"""The worker's handle on the compiled timing core (``harness.worker._sealed``, harness/worker/csrc).

On a GPU the core owns the flush buffer, events, hold-and-flush kernel, second clock, event overhead
and the bound custom_kernel, and returns each result with a MAC the parent checks
(``harness.judge.worker_link.seal``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from harness.contract import leaf_hash, output_file

try:
    from harness.worker import _sealed
except ImportError:  # built by `pip install -e .` where a C compiler exists (setup.py)
    _sealed = None


def sealed_available() -> bool:
    return _sealed is not None


def _sealed_hooks() -> dict[str, Any]:
    """The torch entry points the core calls to read outputs, and the builtins it probes the mode
    stacks and sys.monitoring with, captured before the submission runs.

    The core copies each one into C at init and keeps no reference to this dict: editing it, or
    any object gc can reach, afterwards changes nothing (s10_gc_edit_core_hooks.py). The probes are
    kept as their C entry points, so that rewriting the function objects later changes nothing.
    """
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12+
    storage = torch.UntypedStorage
    return {
        "tensor_type": torch.Tensor,
        "dtype": torch.Tensor.__dict__.get("dtype") or torch._C.TensorBase.__dict__["dtype"],
        "is_cuda": torch._C.TensorBase.__dict__["is_cuda"].__get__,
        "untyped_storage": torch._C.TensorBase.untyped_storage,
        "storage_data_ptr": storage.data_ptr,
        "storage_nbytes": storage.nbytes,
        "storage_offset": torch._C.TensorBase.storage_offset,
        "size": torch._C.TensorBase.size,
        "stride": torch._C.TensorBase.stride,
        "function_stack_len": torch._C._len_torch_function_stack,
        "dispatch_stack_len": torch._C._len_torch_dispatch_stack,
        "monitoring_get_tool": monitoring.get_tool if monitoring else None,
    }


class SealedTimer:
    """The worker's handle on the compiled core: init before the import, then bind, then time.

    It holds nothing that decides a time: shadowing or editing it changes what is sent, which the
    parent's MAC check rejects. ``protection`` is the core's own line on where its key and tables
    are (the worker's 'ready' message reports it with the sandbox).
    """

    def __init__(self, key_fd: int, device: torch.device) -> None:
        if device.type == "cuda":
            torch.zeros(1, device=device)  # makes torch's primary context current for the driver API
            stream = torch.cuda.current_stream(device).cuda_stream
            l2_bytes = torch.cuda.get_device_properties(device).L2_cache_size
            self.overhead_us, self.spread_us, from_graph, self.protection, window, handles = _sealed.init(
                key_fd, stream, l2_bytes, _sealed_hooks(), leaf_hash.ptx())
            self._streams = [torch.cuda.ExternalStream(handle, device=device) for handle in handles]
            reference = "graph replay" if from_graph else "kernel pairs, no graphs here"
            self.method = (f"cuda-event per call in compiled code, every stream idle, {window}, minus "
                           f"{self.overhead_us:.2f} us event overhead ({reference}; 5 rounds, spread "
                           f"{self.spread_us:.2f} us)")
        else:
            self.overhead_us, self.spread_us, _, self.protection, _, _ = _sealed.init(key_fd, None, 0, _sealed_hooks())
            self._streams = []
            self.method = "wall clock in compiled code (cpu, not rankable)"
        self.persisting_l2_reset = device.type == "cuda"

    @staticmethod
    def bind(loader: Callable[[Any], Any], path: Any) -> bool:
        """Import the submission through ``loader``; False when it defines no callable custom_kernel."""
        return bool(_sealed.bind(loader, path))

    @staticmethod
    def map_outputs(fd: int) -> None:
        """Hand the core the parent's output file: outputs at least as large as the one rule says
        (harness.contract.output_file) are copied there after the MAC instead of crossing the pipe."""
        _sealed.map_outputs(fd, output_file.FILE_MIN_BYTES)

    @staticmethod
    def map_snapshot(fd: int, nbytes: int) -> None:
        """Hand the core the parent's device snapshot (a CUDA allocation's POSIX descriptor, closed by the
        core): a call's outputs that leave the pipe (output_file.through_file) and fit are copied there on
        the device instead of into the output file, and never cross to the host."""
        _sealed.map_snapshot(fd, nbytes, output_file.FILE_MIN_BYTES)

    @staticmethod
    def signal_window(fd: int) -> None:
        """Have the core say on ``fd`` (the result channel) when each timed call's window is over on the GPU
        (messages.WindowClosed), before its copies, digest and MAC: the parent's check starts meanwhile."""
        _sealed.signal_window(fd)

    @staticmethod
    def map_inputs(fd: int) -> None:
        """Hand the core the parent's staging file (read-only): staged CPU calls' inputs, encrypted."""
        _sealed.map_inputs(fd)

    @staticmethod
    def add_draw(graph: int, tables: list[tuple[int, bytes, list[tuple[int, bytes]]]]) -> int:
        """Hand the core a captured draw (drawn_inputs.py); returns its slot. Before the import only."""
        return _sealed.add_draw(graph, tables)

    @staticmethod
    def max_draws() -> int:
        """How many captured draws the core holds (its pages for them are fixed in its image)."""
        return _sealed.MAX_DRAWS

    @property
    def streams(self) -> int:
        """How many streams the core's windows take in turn (Ready.streams: the parent warms each one)."""
        return len(self._streams)

    def use_stream(self, index: int) -> None:
        """Make torch's current stream the one the core's window of call ``index`` runs on (its stream
        ``index`` % CALL_STREAMS), so that the submission's launches land between the core's events.

        Only a courtesy to honest code: a submission that launches elsewhere is timed by the core's window all
        the same (the hold fills the GPU, the streams are blocking, the second clock counts every stream).
        """
        if self._streams:
            torch.cuda.set_stream(self._streams[index % len(self._streams)])

    @staticmethod
    def time_call(data: Any, index: int, seed: int, sleep_us: float, staged: list[Any] | None = None,
                  kept: int = 0, draw: int = -1, sealed: bytes = b"") -> tuple[Any, ...]:
        """``staged``: every tensor of ``data``, into which the core decrypts the call's staged inputs;
        ``kept``: a bit per tensor custom_kernel must leave unchanged; ``draw`` and ``sealed``: the slot
        of the captured draw the core replays under the masked seed (sealed.c: time_call). On a GPU the
        core runs the window on its stream ``index`` % CALL_STREAMS (``use_stream`` first)."""
        return _sealed.time_call(data, index, seed, sleep_us, staged, kept, draw, sealed)

    @staticmethod
    def last_phases() -> dict[str, float]:
        """Where the last timed call's host time went inside the core, ms per phase (shown only: the
        marks are ordinary memory the submission could change)."""
        return _sealed.last_phases()

    @staticmethod
    def recheck(nonce: bytes) -> tuple[float, float, float, bytes]:
        return _sealed.recheck(nonce)
