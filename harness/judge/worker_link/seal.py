"""The parent's side of sealed results: the per-run key and the check of every result's MAC.

The worker's compiled core (harness/worker/csrc/sealed.c) signs each timed call with HMAC-SHA256 under a
key it read from a pipe before the submission was imported. The message is the call index and
seed the parent asked for, the time, the event overhead, the unfinished-work and exposed-launch
flags, a digest of the outputs (their descriptions and the SHA-256 of each 1 MiB chunk) and the
second clock's reading (judged over a case by harness/judge/verdict/second_clock.py); the parent
rebuilds it from what it received, so a changed time, a changed output or clock reading, a result
replayed from another call or a missing MAC all fail here (docs/security.md).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import importlib.util
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from harness.contract.messages import Output, Rechecked
from harness.judge.worker_link import host_share

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


def _storage_bytes(tensor: torch.Tensor) -> memoryview:
    """The tensor's whole storage as bytes, without a copy (hashlib reads the buffer in place)."""
    storage = torch.empty(0, dtype=torch.uint8).set_(tensor.untyped_storage())
    return memoryview(storage.numpy())


DIGEST_CHUNK_BYTES = 1 << 18
"""The leaf size of the output digest; the same constant as harness/worker/csrc/digest_tree.h. 256 KiB
(1 MiB until 2026-11-26): SHA-256 runs at 1.2-1.3 GB/s a thread on the H100's host (results.md run 14),
so a 1.75 MiB output in 1 MiB leaves took two threads 0.8 ms; in 256 KiB leaves seven take 0.2."""
DIGEST_MAX_THREADS = 8
"""The most threads hashing outputs; the same constant as harness/worker/csrc/digest_tree.h."""


@functools.cache
def _hash_threads() -> int:
    """This evaluation's share of the host's cores, at most DIGEST_MAX_THREADS (host_share: two
    evaluations on one host each took 8); read once, not per call (it lists the host's GPUs)."""
    return max(1, min(DIGEST_MAX_THREADS, host_share.cpu_share()))


@functools.cache
def _leaf_hashers() -> ThreadPoolExecutor:
    """hashlib releases the GIL on buffers over 2 KiB: chunks are hashed side by side."""
    return ThreadPoolExecutor(max_workers=_hash_threads(), thread_name_prefix="leaf-sha256")


def _hash_side_by_side(pieces: list[memoryview]) -> list[bytes]:
    """SHA-256 of each piece, in order: one task per thread, each hashing every n-th piece, so that
    the pool's own cost (tens of us a task) is paid per thread, not per 256 KiB leaf."""
    threads = min(len(pieces), _hash_threads())

    def hash_every(start: int) -> list[bytes]:
        return [hashlib.sha256(piece).digest() for piece in pieces[start::threads]]

    if threads <= 1:
        return hash_every(0) if pieces else []
    strided = list(_leaf_hashers().map(hash_every, range(threads)))
    return [strided[index % threads][index // threads] for index in range(len(pieces))]


def _leaves(outputs: list[memoryview]) -> list[list[bytes]]:
    """SHA-256 of each DIGEST_CHUNK_BYTES chunk of each output (none for an empty one), the chunks of
    every output in one pool: a list of many small outputs (the grouped GEMM's eight) is as parallel
    as one large output. Hashed one output at a time, eight outputs of 1 MiB took one thread
    (docs/results.md run 11: 7.4 ms with the threads and without)."""
    chunks = [(number, data[at:at + DIGEST_CHUNK_BYTES]) for number, data in enumerate(outputs)
              for at in range(0, len(data), DIGEST_CHUNK_BYTES)]  # memoryview slices: no copies
    pieces = [chunk for _, chunk in chunks]
    hashes = _hash_side_by_side(pieces)
    leaves: list[list[bytes]] = [[] for _ in outputs]
    for (number, _), leaf in zip(chunks, hashes):
        leaves[number].append(leaf)
    return leaves


def output_digest(entries: list[dict[str, Any]], tensors: list[Any]) -> bytes:
    """SHA-256 over each output's dtype, shape, stride, offset, size and its chunks' SHA-256
    (as harness/worker/csrc/sealed_outputs.c)."""
    if any("stride" not in entry or not isinstance(tensor, torch.Tensor) for entry, tensor in zip(entries, tensors)):
        raise SealBroken("an output was not sent as the sealed copy")
    digest = hashlib.sha256()
    for entry, leaves in zip(entries, _leaves([_storage_bytes(tensor) for tensor in tensors])):
        digest.update(f"torch.{entry['dtype']}".encode() + b"\0")
        for dims in (entry["shape"], entry["stride"]):
            digest.update(struct.pack(f"<q{len(dims)}q", len(dims), *dims))
        digest.update(struct.pack("<qq", int(entry["offset"]), int(entry["nbytes"])))
        for leaf in leaves:
            digest.update(leaf)
    return digest.digest()


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


def verify_call(key: bytes, index: int, seed: int, overhead_us: float, output: Output, entries: list[dict[str, Any]],
                tensors: list[Any]) -> None:
    """Raise SealBroken unless the result is the compiled core's, for this call, unchanged (``entries``:
    the header's descriptions of the tensors, as received)."""
    if not output.mac:
        raise SealBroken("the result carries no MAC")
    digest = output_digest(entries, tensors)
    expected = call_mac(key, index, seed, output.time_us, overhead_us, output.unfinished, output.exposed, digest,
                        ClockReading.of(output))
    if not hmac.compare_digest(output.mac, expected):
        raise SealBroken(f"the result of call {index} does not carry the timing core's MAC (forged, altered or "
                         "replayed)")


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
