"""The parent's side of sealed results: the per-run key and the check of every result's MAC.

The worker's compiled core (harness/worker/csrc/sealed.c) signs each timed call with HMAC-SHA256 under a
key it read from a pipe before the submission was imported. The message is the call index and
seed the parent asked for, the time, the event overhead, the unfinished-work and exposed-launch
flags and a digest of the outputs (their descriptions and the SHA-256 of each 1 MiB chunk); the
parent rebuilds it from what it received, so a changed time, a changed
output, a result replayed from another call or a missing MAC all fail here (docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from harness.contract.messages import Output, Rechecked
from harness.judge.worker_link.worker_spawn import KEY_BYTES, new_key_pipe  # noqa: F401 (made where workers start)

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


DIGEST_CHUNK_BYTES = 1 << 20
"""The leaf size of the output digest; the same constant as harness/worker/csrc/digest_tree.h."""
_LEAF_HASHERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="leaf-sha256")
"""hashlib releases the GIL on large buffers: an output's chunks are hashed side by side."""


def _leaves(data: memoryview) -> list[bytes]:
    """SHA-256 of each DIGEST_CHUNK_BYTES chunk of ``data`` (none for an empty output)."""
    chunks = [data[at:at + DIGEST_CHUNK_BYTES] for at in range(0, len(data), DIGEST_CHUNK_BYTES)]
    if len(chunks) <= 1:
        return [hashlib.sha256(chunk).digest() for chunk in chunks]
    return list(_LEAF_HASHERS.map(lambda chunk: hashlib.sha256(chunk).digest(), chunks))


def output_digest(entries: list[dict[str, Any]], tensors: list[Any]) -> bytes:
    """SHA-256 over each output's dtype, shape, stride, offset, size and its chunks' SHA-256
    (as harness/worker/csrc/sealed_outputs.c)."""
    digest = hashlib.sha256()
    for entry, tensor in zip(entries, tensors):
        if "stride" not in entry or not isinstance(tensor, torch.Tensor):
            raise SealBroken("an output was not sent as the sealed copy")
        digest.update(f"torch.{entry['dtype']}".encode() + b"\0")
        for dims in (entry["shape"], entry["stride"]):
            digest.update(struct.pack(f"<q{len(dims)}q", len(dims), *dims))
        digest.update(struct.pack("<qq", int(entry["offset"]), int(entry["nbytes"])))
        for leaf in _leaves(_storage_bytes(tensor)):
            digest.update(leaf)
    return digest.digest()


def call_mac(key: bytes, index: int, seed: int, time_us: float, overhead_us: float, unfinished: bool,
             exposed: bool, digest: bytes) -> bytes:
    message = b"call:" + struct.pack("<qQddBB", index, seed, time_us, overhead_us, unfinished, exposed) + digest
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
    expected = call_mac(key, index, seed, output.time_us, overhead_us, output.unfinished, output.exposed, digest)
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
"""Bounds of a consistent event-overhead measurement; the same constants as harness/worker/csrc/sealed.c."""


def overhead_moved(overhead_us: float, fresh_us: float, spread_us: float) -> tuple[bool, bool]:
    """(the recheck disagrees with the overhead in use, the core adopted the fresh value)."""
    moved = abs(fresh_us - overhead_us) > OVERHEAD_SPREAD_MAX_US or spread_us > OVERHEAD_SPREAD_MAX_US
    consistent = 0.0 <= fresh_us <= OVERHEAD_MAX_US and spread_us <= OVERHEAD_SPREAD_MAX_US
    return moved, moved and consistent and abs(fresh_us - overhead_us) > OVERHEAD_SPREAD_MAX_US
