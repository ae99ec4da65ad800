"""The parent's device snapshot for one GPU worker: device memory the parent allocates and exports, into
which the worker's core copies a call's outputs on the device, so that they never cross to the host.

A CUDA virtual-memory allocation (``cuMemCreate``) exported as a POSIX descriptor, passed to the worker
after its Start request and mapped by its core before the submission is imported
(harness/worker/csrc/output_copies.c: map_snapshot). The worker can write this memory at any time, so the
parent never checks it in place: ``read`` copies the bytes, on the device, into a tensor of its own,
and the MAC check digests that copy on the GPU (output_leaves) before the check reads it. A byte changed
after the core's digest fails the MAC, as for the output file (docs/security.md).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable

import torch

from harness.contract import protocol
from harness.contract.libcuda import check, driver
from harness.contract.messages import ProtocolError
from harness.contract.output_file import SNAPSHOT_BYTES, SNAPSHOT_KEY
from harness.judge.worker_link import seal

_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocationFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    """CUmemAllocationProp."""

    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocationFlags)]


class _AccessDesc(ctypes.Structure):
    """CUmemAccessDesc."""

    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class DeviceSnapshot:
    """``nbytes`` (rounded up to the allocation granularity) of device memory on ``device``, mapped here,
    with the descriptor to hand the worker (``hand_over``, once). Raises RuntimeError where the driver
    refuses a step, having released what it had made."""

    def __init__(self, device: torch.device, nbytes: int) -> None:
        self.device = torch.device("cuda", device.index if device.index is not None else torch.cuda.current_device())
        self._cuda = driver()
        self._handle = ctypes.c_ulonglong()
        self._descriptor: int | None = None
        self.base = ctypes.c_ulonglong()
        self.nbytes = 0
        self._pending = False  # a copy queued by ``read`` and not yet waited for
        self._entered: contextlib.ExitStack | None = None  # the device and stream ``read`` holds until ``settle``
        try:
            self._make(nbytes)
        except RuntimeError:
            self.close()
            raise

    def _make(self, nbytes: int) -> None:
        with torch.cuda.device(self.device):
            torch.zeros(1, device=self.device)  # torch's primary context current on this thread
            prop = _AllocationProp(type=_PINNED, requestedHandleTypes=_POSIX_FD,
                                   location=_Location(_DEVICE, self.device.index))
            granularity = ctypes.c_size_t()
            check(self._cuda.cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(prop), 0),
                  "cuMemGetAllocationGranularity")
            size = -(-nbytes // granularity.value) * granularity.value
            check(self._cuda.cuMemCreate(ctypes.byref(self._handle), ctypes.c_size_t(size), ctypes.byref(prop),
                                         ctypes.c_ulonglong(0)), "cuMemCreate of the device snapshot")
            descriptor = ctypes.c_int(-1)
            check(self._cuda.cuMemExportToShareableHandle(ctypes.byref(descriptor), self._handle, _POSIX_FD,
                                                          ctypes.c_ulonglong(0)), "exporting the device snapshot")
            self._descriptor = descriptor.value
            base = ctypes.c_ulonglong()
            check(self._cuda.cuMemAddressReserve(ctypes.byref(base), ctypes.c_size_t(size),
                                                 ctypes.c_size_t(0), ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)),
                  "cuMemAddressReserve")
            self.base, self.nbytes = base, size
            check(self._cuda.cuMemMap(self.base, ctypes.c_size_t(self.nbytes), ctypes.c_size_t(0), self._handle,
                                      ctypes.c_ulonglong(0)), "cuMemMap")
            access = _AccessDesc(_Location(_DEVICE, self.device.index), _READ_WRITE)
            check(self._cuda.cuMemSetAccess(self.base, ctypes.c_size_t(self.nbytes), ctypes.byref(access),
                                            ctypes.c_size_t(1)), "cuMemSetAccess")
            self._stream = torch.cuda.Stream(self.device)

    def hand_over(self, commands_fd: int, places: dict[str, protocol.Fetch],
                  settlers: list[Callable[[], None]]) -> None:
        """Pass the descriptor to the worker (after the Start that names the snapshot), once, and read the
        entries that lie here with ``read`` from then on, each message's copies waited for by ``settle``."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is None:
            raise RuntimeError("the device snapshot was already handed over")
        try:
            protocol.send_descriptor(commands_fd, descriptor)
        finally:
            os.close(descriptor)
        places[SNAPSHOT_KEY] = self.read
        settlers.append(self.settle)

    def read(self, at: int, nbytes: int) -> torch.Tensor:
        """``nbytes`` from ``at`` as a uint8 tensor of the parent's own memory on the snapshot's GPU, its copy
        queued on the reader's thread; ``settle`` waits for it, once for all of a message's outputs, before the
        reply is handed on (one wait per output cost the grouped GEMM's eight outputs eight)."""
        if at < 0 or at + nbytes > self.nbytes:
            raise ProtocolError(f"{nbytes} bytes at {at} lie outside the {self.nbytes}-byte device snapshot")
        # Allocated on the snapshot's own stream, the one its copy runs on: the parent's draw and reference run
        # meanwhile on its main thread's stream (WorkerSession.call, window_closed), and a block freed there, its
        # kernels still queued, is handed out again on that stream only (a copy into one on this thread, this
        # stream, overwrote the reference's work and its own: results.md run 29, call 5). The device and stream
        # are entered once a message, left by ``settle``: entered per output they cost up to 36 us each on the
        # H100's host, 0.31 ms of the grouped GEMM's eight outputs against 0.10 (0.16 against 0.14 on another
        # host: docs/results.md run 33).
        if self._entered is None:
            self._entered = contextlib.ExitStack()
            self._entered.enter_context(torch.cuda.device(self.device))
            self._entered.enter_context(torch.cuda.stream(self._stream))
        copy = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
        if nbytes:
            check(self._cuda.cuMemcpyDtoDAsync_v2(ctypes.c_ulonglong(copy.data_ptr()),
                                                  ctypes.c_ulonglong(self.base.value + at), ctypes.c_size_t(nbytes),
                                                  ctypes.c_void_p(self._stream.cuda_stream)),
                  "copy out of the device snapshot")
            self._pending = True
        return copy

    def settle(self) -> None:
        """Wait for every copy ``read`` queued since the last wait, and leave the device and stream it entered
        (the reader calls it after every message, on the thread that read it)."""
        if self._pending:
            self._pending = False
            self._stream.synchronize()
        if self._entered is not None:
            self._entered.close()
            self._entered = None

    def close(self) -> None:
        """Unmap and release the parent's handle (the worker's mapping, if any, keeps the memory until it ends)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
        if self.base.value:
            self._cuda.cuMemUnmap(self.base, ctypes.c_size_t(self.nbytes))  # refused where it was never mapped
            self._cuda.cuMemAddressFree(self.base, ctypes.c_size_t(self.nbytes))
            self.base = ctypes.c_ulonglong()
        if self._handle.value:
            self._cuda.cuMemRelease(self._handle)
            self._handle = ctypes.c_ulonglong()


def for_worker(device: str, check_on: torch.device | None, unsealed: bool) -> DeviceSnapshot | None:
    """A device snapshot on the check's GPU for a sealed GPU worker (the check runs on the worker's GPU),
    else None: outputs take the output file or the pipe. So does a parent whose driver refuses one (no
    VMM); a worker that cannot map it (another GPU) uses the file, and says so in its Ready's sandbox."""
    if (unsealed or not seal.sealed_core_built() or check_on is None or check_on.type != "cuda"
            or torch.device(device).type != "cuda"):
        return None
    try:
        return DeviceSnapshot(check_on, SNAPSHOT_BYTES)
    except RuntimeError:
        return None
