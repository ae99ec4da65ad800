"""The framing of messages between the trusted evaluator and the worker that runs a submission.

A message is a 4-byte length, a JSON header and, when the header lists tensors, their raw
bytes. JSON rather than pickle: the parent never unpickles what an untrusted process wrote.
Tensors come back only as whitelisted dtypes with checked sizes, so a malformed or forged
message is a protocol violation, never code execution or a crash of the evaluator. What a
header may say is ``harness.contract.messages``: ``send_message`` and ``receive_message`` carry
its typed records.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import torch

from harness.contract.messages import KIND_KEY, Message, ProtocolError, decode, encode
from harness.contract.output_file import FILE_KEY, SNAPSHOT_KEY

Fetch = Callable[[int, int], torch.Tensor]
"""The parent's reader of one place (its output file, its device snapshot): (offset, nbytes) -> a uint8
tensor of its own memory."""
PLACES = {"file": FILE_KEY, "snapshot": SNAPSHOT_KEY}
"""Where the core may put a call's outputs instead of the pipe, and each one's key in a tensor entry."""

MAX_HEADER_BYTES = 1 << 20
MAX_TENSOR_BYTES = 1 << 31
TRACEBACK_CHARS = 8000
"""At most this much of a worker's traceback or stack dump is kept (its end: the innermost frames).
The worker cuts what it sends; the parent cuts again what it accepts."""


def tail(text: str, limit: int = TRACEBACK_CHARS) -> str:
    """The last ``limit`` characters of ``text``, marked as cut when it was longer."""
    return text if len(text) <= limit else "...\n" + text[-limit:]

# Output dtypes a submission may return; anything else fails the dtype check by name.
WIRE_DTYPES: dict[str, torch.dtype] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float4_e2m1fn_x2": torch.float4_e2m1fn_x2,
}


def _read_into(fd: int, view: memoryview) -> None:
    got = 0
    while got < len(view):
        count = os.readv(fd, [view[got:]])
        if not count:
            raise EOFError("the worker closed the result channel")
        got += count


def _read_exact(fd: int, size: int) -> bytearray:
    """``size`` bytes of a length prefix or header (bounded by MAX_HEADER_BYTES)."""
    buffer = bytearray(size)
    _read_into(fd, memoryview(buffer))
    return buffer


def _read_payload(fd: int, size: int) -> torch.Tensor:
    """A tensor payload read straight into the uint8 tensor it is then viewed through (no copy).

    torch.empty leaves the memory uninitialized, so its pages are committed only as the bytes
    arrive: a worker's header that names a 2 GiB tensor and sends nothing costs the parent no
    memory (a zero-filled bytearray of that size would, until the stage limit).
    """
    payload = torch.empty(size, dtype=torch.uint8)
    if size:
        _read_into(fd, memoryview(payload.numpy()))
    return payload


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def tensor_to_wire(tensor: torch.Tensor) -> tuple[dict[str, Any], bytes]:
    """Header entry and raw bytes of a tensor (copied to the CPU, made contiguous)."""
    name = str(tensor.dtype).removeprefix("torch.")
    host = tensor.detach().to("cpu").contiguous()
    raw = host.view(torch.uint8) if host.element_size() == 1 else host.view(-1).view(torch.uint8)
    payload = raw.numpy().tobytes() if host.numel() else b""
    return {"dtype": name, "shape": list(host.shape), "nbytes": len(payload)}, payload


def storage_entry(dtype: str, shape: tuple[int, ...], stride: tuple[int, ...], offset: int,
                  payload: bytes) -> dict[str, Any]:
    """Header entry of an output sent as its whole storage plus a view (the sealed timer's copy)."""
    return {"dtype": dtype.removeprefix("torch."), "shape": list(shape), "stride": list(stride), "offset": offset,
            "nbytes": len(payload)}


def storage_part(dtype: str, shape: tuple[int, ...], stride: tuple[int, ...], offset: int,
                 payload: bytes | tuple[str, int, int]) -> tuple[dict[str, Any], bytes]:
    """Header entry and pipe bytes of an output the core copied: its ``payload`` bytes, or (place, where,
    size) in the parent's output file or device snapshot, which then sends nothing down the pipe."""
    if isinstance(payload, tuple):
        place, at, nbytes = payload
        return {**storage_entry(dtype, shape, stride, offset, b""), "nbytes": nbytes, PLACES[place]: at}, b""
    return storage_entry(dtype, shape, stride, offset, payload), payload


def _as_bytes_tensor(payload: bytes | torch.Tensor) -> torch.Tensor:
    """A payload as a flat uint8 tensor: received payloads already are one (no copy)."""
    if isinstance(payload, torch.Tensor):
        return payload
    return torch.frombuffer(bytearray(payload), dtype=torch.uint8) if payload else torch.empty(0, dtype=torch.uint8)


def _dims(entry: dict[str, Any], key: str) -> list[int]:
    """A shape or stride: a list of integers, nothing else."""
    dims = entry.get(key)
    if not isinstance(dims, list) or any(type(d) is not int for d in dims):
        raise ProtocolError(f"a tensor entry whose {key} is not a list of integers")
    return dims


def _view_of_storage(entry: dict[str, Any], dtype: torch.dtype, payload: bytes | torch.Tensor) -> torch.Tensor:
    itemsize = dtype.itemsize
    if len(payload) % itemsize:
        raise ProtocolError(f"a {len(payload)}-byte storage cannot hold {entry['dtype']} elements")
    shape, stride = _dims(entry, "shape"), _dims(entry, "stride")
    if len(shape) != len(stride) or any(s < 0 for s in shape + stride) or int(entry["offset"]) < 0:
        raise ProtocolError("a storage entry with a bad shape, stride or offset")
    storage = _as_bytes_tensor(payload)
    try:
        return storage.view(dtype).as_strided(shape, stride, int(entry["offset"]))
    except RuntimeError as error:
        raise ProtocolError(f"a view outside its storage ({str(error).splitlines()[0]})") from None


def tensor_from_wire(entry: dict[str, Any], payload: bytes | torch.Tensor) -> torch.Tensor | str:
    """Rebuild a tensor, or return a description of why it cannot be one of ours."""
    dtype = WIRE_DTYPES.get(entry.get("dtype", ""))
    if dtype is None:
        return f"tensor of unsupported dtype {entry.get('dtype')!r}"
    if "stride" in entry:
        return _view_of_storage(entry, dtype, payload)
    shape = _dims(entry, "shape")
    count = 1
    for size in shape:
        count *= size
    itemsize = dtype.itemsize
    if count * itemsize != len(payload):
        raise ProtocolError(f"tensor of shape {shape} and dtype {entry['dtype']} cannot have {len(payload)} bytes")
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return _as_bytes_tensor(payload).view(dtype).reshape(shape)


def send(fd: int, header: dict[str, Any], tensors: list[torch.Tensor] | None = None,
         parts: list[tuple[dict[str, Any], bytes]] | None = None) -> None:
    """Send a header and tensors, or ready-made (entry, payload) ``parts`` (see storage_entry)."""
    if tensors:
        parts = [tensor_to_wire(tensor) for tensor in tensors]
    payloads = [payload for _, payload in parts or []]
    if parts:
        header = {**header, "tensors": [entry for entry, _ in parts]}
    encoded = json.dumps(header).encode()
    _write_all(fd, struct.pack("<I", len(encoded)) + encoded)
    for payload in payloads:
        _write_all(fd, payload)


def _payload(fd: int, entry: dict[str, Any], nbytes: int, fetch: Mapping[str, Fetch] | None) -> torch.Tensor:
    """An entry's bytes: from the pipe, or (an entry with one of PLACES' keys) from where the parent's
    reader for that place reads them."""
    keys = [key for key in PLACES.values() if key in entry]
    if not keys:
        return _read_payload(fd, nbytes)
    if len(keys) > 1:
        raise ProtocolError("a tensor entry in two places")
    at = entry[keys[0]]
    reader = (fetch or {}).get(keys[0])
    if reader is None:
        raise ProtocolError("a tensor entry in a place this side does not have")
    if type(at) is not int or not 0 <= at <= MAX_TENSOR_BYTES - nbytes:
        raise ProtocolError("a tensor entry at a bad place")
    return reader(at, nbytes)


def receive(fd: int, fetch: Mapping[str, Fetch] | None = None) -> tuple[dict[str, Any], list[torch.Tensor | str]]:
    """Read one message; raise ProtocolError on anything malformed, EOFError on a closed channel.
    ``fetch``: the parent's readers by place key (its output file, its device snapshot), for entries
    that lie there."""
    (length,) = struct.unpack("<I", _read_exact(fd, 4))
    if length > MAX_HEADER_BYTES:
        raise ProtocolError(f"a {length}-byte header is not one the harness writes")
    try:
        header = json.loads(_read_exact(fd, length))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ProtocolError(f"unreadable header ({error})") from None
    if not isinstance(header, dict) or not isinstance(header.get(KIND_KEY), str):
        raise ProtocolError("a header that names no message kind")
    entries = header.get("tensors", [])
    if not isinstance(entries, list):
        raise ProtocolError("a header whose 'tensors' is not a list")
    tensors: list[torch.Tensor | str] = []
    for entry in entries:
        nbytes = entry.get("nbytes") if isinstance(entry, dict) else None
        if type(nbytes) is not int or not 0 <= nbytes <= MAX_TENSOR_BYTES:
            raise ProtocolError("a tensor entry with a bad size")
        payload = _payload(fd, entry, nbytes, fetch)
        try:
            tensors.append(tensor_from_wire(entry, payload))
        except (TypeError, ValueError, KeyError, OverflowError) as error:  # fields of the wrong kind
            raise ProtocolError(f"a malformed tensor entry ({type(error).__name__}: {error})") from None
    return header, tensors


class Received(NamedTuple):
    """One message as read: its record, the header's tensor entries (the seal covers them), the tensors, and
    when the parent's reader had it whole (perf_counter; 0 where no one stamped it)."""

    message: Any
    entries: list[dict[str, Any]]
    tensors: list[torch.Tensor | str]
    read_at: float = 0.0


def send_message(fd: int, message: Message, tensors: list[torch.Tensor] | None = None,
                 parts: list[tuple[dict[str, Any], bytes]] | None = None) -> None:
    """Send a typed record, with its tensors (or ready-made ``parts``, as ``send``)."""
    send(fd, encode(message), tensors, parts)


def receive_message(fd: int, expected: Mapping[str, type], fetch: Mapping[str, Fetch] | None = None) -> Received:
    """Read one message that must be one of the ``expected`` kinds (messages.REQUESTS or REPLIES);
    ``fetch`` as ``receive``."""
    header, tensors = receive(fd, fetch)
    entries = header.pop("tensors", [])
    return Received(decode(header, expected), entries, tensors)


def send_descriptor(fd: int, descriptor: int) -> None:
    """Pass ``descriptor`` over the channel socket ``fd`` (SCM_RIGHTS, with one byte): it follows the
    message that announced it, which the other side has read to its end."""
    channel = socket.socket(fileno=os.dup(fd))
    try:
        socket.send_fds(channel, [b"d"], [descriptor])
    finally:
        channel.close()


def receive_descriptor(fd: int) -> int:
    """The descriptor ``send_descriptor`` passed on the channel socket ``fd``."""
    channel = socket.socket(fileno=os.dup(fd))
    try:
        data, descriptors, _, _ = socket.recv_fds(channel, 1, 1)
    finally:
        channel.close()
    if data != b"d" or len(descriptors) != 1:
        for descriptor in descriptors:
            os.close(descriptor)
        raise ProtocolError("a descriptor was announced and did not come")
    return descriptors[0]
