"""The parent's side of sealed results: the per-run key and the check of every result's MAC.

The worker's compiled core (harness/worker/csrc/sealed.c) signs each timed call with HMAC-SHA256 under a
key it read from a pipe before the submission was imported. The message is the call index and
seed the parent asked for, the time, the event overhead, the unfinished-work and exposed-launch
flags, a digest of the outputs (their descriptions and the SHA-256 of each 4 KiB piece) and the
second clock's reading (judged over a case by harness/judge/verdict/second_clock.py); the parent
rebuilds it from what it received, so a changed time, a changed output or clock reading, a result
replayed from another call or a missing MAC all fail here (docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from harness.contract.messages import Output, Rechecked
from harness.judge.worker_link import output_leaves

NONCE_BYTES = 16


class SealBroken(Exception):
    """A result whose MAC is missing or does not match what the parent received."""


SEALED_MODULE = "harness.worker._sealed"
SEALED_MISSING = (
    "the compiled timing core harness.worker._sealed is not built: install a C compiler and the Python headers "
    "(apt-get install gcc python3-dev) and run `pip install -e .` again"
)


def sealed_core_built() -> bool:
    """Whether this install has the compiled core: then every GPU result must come sealed (a worker
    that says it has none is lying). Looked up, not imported: the parent never loads worker code."""
    return importlib.util.find_spec(SEALED_MODULE) is not None


def start_digest(entries: list[dict[str, Any]], tensors: list[Any]) -> Callable[[], bytes]:
    """SHA-256 over each output's dtype, shape, stride, offset, size and its leaves, the SHA-256 of each
    4 KiB piece of its storage (as harness/worker/csrc/sealed_outputs.c; harness/contract/leaf_hash.py),
    returned by the function this returns: the leaves are started now (on the GPU, queued) and waited for
    there. ``tensors``: the copies the parent will check, on its GPU or on the host."""
    if any("stride" not in entry or not isinstance(tensor, torch.Tensor) for entry, tensor in zip(entries, tensors)):
        raise SealBroken("an output was not sent as the sealed copy")
    pending = output_leaves.start_leaves(tensors)

    def digest() -> bytes:
        hashed = hashlib.sha256()
        for entry, leaves in zip(entries, pending()):
            hashed.update(f"torch.{entry['dtype']}".encode() + b"\0")
            for dims in (entry["shape"], entry["stride"]):
                hashed.update(struct.pack(f"<q{len(dims)}q", len(dims), *dims))
            hashed.update(struct.pack("<qq", int(entry["offset"]), int(entry["nbytes"])))
            hashed.update(leaves)
        return hashed.digest()
    return digest


def output_digest(entries: list[dict[str, Any]], tensors: list[Any]) -> bytes:
    """``start_digest``'s digest, waited for."""
    return start_digest(entries, tensors)()


@dataclass(frozen=True)
class ClockReading:
    """One timed call on two clocks, as the core signed it (all zero off the GPU): the events' time,
    the GPU's own clock (%globaltimer stamps the core's kernels write), how much more the second clock
    read less the end stamp's own wait behind the end event, and the allowance calibrated for it."""

    event_us: float = 0.0
    clock_us: float = 0.0
    gap_us: float = 0.0
    allowance_us: float = 0.0

    @classmethod
    def of(cls, output: Output) -> ClockReading:
        return cls(output.event_us, output.clock_us, output.clock_gap_us, output.clock_allowance_us)

    @property
    def beyond(self) -> bool:
        """The events read shorter than the second clock by more than the allowance."""
        return self.gap_us > self.allowance_us


def call_message(index: int, seed: int, time_us: float, overhead_us: float, unfinished: bool, exposed: bool,
                 digest: bytes, clock: ClockReading) -> bytes:
    """The bytes the core signs for one call (harness/worker/csrc/sealed.c: seal_call)."""
    return (b"call:" + struct.pack("<qQddBB", index, seed, time_us, overhead_us, unfinished, exposed) + digest
            + struct.pack("<4d", clock.event_us, clock.clock_us, clock.gap_us, clock.allowance_us))


def call_mac(key: bytes, index: int, seed: int, time_us: float, overhead_us: float, unfinished: bool,
             exposed: bool, digest: bytes, clock: ClockReading) -> bytes:
    message = call_message(index, seed, time_us, overhead_us, unfinished, exposed, digest, clock)
    return hmac.new(key, message, hashlib.sha256).digest()


def recheck_mac(key: bytes, nonce: bytes, overhead_us: float, fresh_us: float, spread_us: float) -> bytes:
    message = b"recheck:" + nonce + struct.pack("<ddd", overhead_us, fresh_us, spread_us)
    return hmac.new(key, message, hashlib.sha256).digest()


def start_verify(key: bytes, index: int, seed: int, overhead_us: float, output: Output,
                 entries: list[dict[str, Any]], tensors: list[Any]) -> Callable[[], None]:
    """The check of ``verify_call`` in two steps: the outputs' digest started now (``start_digest``), the
    function returned finishes it and raises SealBroken where the MAC does not match. Nothing may read the
    outputs for a verdict before that function returned."""
    if not output.mac:
        raise SealBroken("the result carries no MAC")
    digest = start_digest(entries, tensors)

    def finish() -> None:
        expected = call_mac(key, index, seed, output.time_us, overhead_us, output.unfinished, output.exposed,
                            digest(), ClockReading.of(output))
        if not hmac.compare_digest(output.mac, expected):
            raise SealBroken(f"the result of call {index} does not carry the timing core's MAC (forged, altered "
                             "or replayed)")
    return finish


def verify_call(key: bytes, index: int, seed: int, overhead_us: float, output: Output, entries: list[dict[str, Any]],
                tensors: list[Any]) -> None:
    """Raise SealBroken unless the result is the compiled core's, for this call, unchanged (``entries``:
    the header's descriptions of the tensors, as received)."""
    start_verify(key, index, seed, overhead_us, output, entries, tensors)()


def verify_recheck(key: bytes, nonce: bytes, rechecked: Rechecked) -> tuple[float, float, float]:
    """(overhead in use, fresh measurement, spread of its rounds), once the MAC checks out."""
    values = rechecked.overhead_us, rechecked.fresh_us, rechecked.spread_us
    if not hmac.compare_digest(rechecked.mac, recheck_mac(key, nonce, *values)):
        raise SealBroken("the overhead recheck does not carry the timing core's MAC")
    return values


OVERHEAD_MAX_US = 8.0
OVERHEAD_SPREAD_MAX_US = 0.5
"""Bounds of a consistent event-overhead measurement; the same constants as harness/worker/csrc/gpu_window.h."""


def overhead_consistent(fresh_us: float, spread_us: float) -> bool:
    """A measurement the core accepts: in bounds, its rounds agreeing (gpu_window.c: overhead_consistent)."""
    return 0.0 <= fresh_us <= OVERHEAD_MAX_US and spread_us <= OVERHEAD_SPREAD_MAX_US


OVERHEAD_RAISE_MAX_US = 0.1
"""How far a recheck may raise the overhead above the worker's first measurement (gpu_window.h): a
submission that keeps the GPU busy during a recheck can only lengthen it, and a longer overhead
shortens every time it is subtracted from."""


def overhead_moved(overhead_us: float, fresh_us: float, spread_us: float, first_us: float) -> tuple[bool, bool]:
    """(the recheck disagrees with the overhead in use, the core adopted the fresh value). The core
    adopts a consistent measurement no higher than the first (taken before the submission existed)
    plus OVERHEAD_RAISE_MAX_US (sealed.c: recheck), so each case subtracts its own."""
    moved = abs(fresh_us - overhead_us) > OVERHEAD_SPREAD_MAX_US or spread_us > OVERHEAD_SPREAD_MAX_US
    return moved, overhead_consistent(fresh_us, spread_us) and fresh_us <= first_us + OVERHEAD_RAISE_MAX_US
