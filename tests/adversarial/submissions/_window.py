"""What the issue-40 rows share: the compiled core's own memory, looked at from native code (ctypes).

Not a submission (its name starts with an underscore). Each function reads what any submission can:
/proc/self/maps, the core's mappings, and the process's small inaccessible anonymous pages, which
mprotect opens as p01c does (where the syscall supervisor is off: it refuses that on the core's pages).
"""

import ctypes
import struct
import sys
from pathlib import Path

import _honest
import _keyscan
import torch

SINGLE_PAGE = 4096
HIDDEN_START_EVENT = 80  # offsetof(hidden_state, start_event) in harness/worker/csrc/core_state.h
HIDDEN_END_EVENT = 88  # offsetof(hidden_state, end_event); tests/adversarial/test_hidden_offsets.py checks both
GATE_BEFORE_RETURN = {"x86_64": 7, "aarch64": 8}  # the core's gate: mov + syscall (x86_64), mov + svc (aarch64)


def core_file() -> str:
    return sys.modules["harness.worker._sealed"].__file__


def image_end(base: int) -> int:
    """Where the core's loaded image ends (its last PT_LOAD segment's memory end, .bss included), for
    the image loaded at ``base``: the nameless mapping after its file may hold more than its .bss."""
    with open(core_file(), "rb") as elf:
        header = elf.read(64)
        (table,), (entry_size, count) = struct.unpack_from("<Q", header, 32), struct.unpack_from("<HH", header, 54)
        elf.seek(table)
        segments = [struct.unpack_from("<IIQQQQQQ", elf.read(entry_size)) for _ in range(count)]
    return base + max(vaddr + memsz for kind, _, _, vaddr, _, _, memsz, _ in segments if kind == 1)


def core_mappings(writable: bool):
    """(start, end) of the compiled core's own mappings that are readable (and writable, if asked):
    those of its file, and the nameless one that continues them (the tail of its .bss), cut where the
    image ends."""
    previous_end, base = None, None
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        start, end = (int(x, 16) for x in fields[0].split("-"))
        mine = fields[-1] == core_file()
        if mine and base is None:
            base = start  # the first mapping is the file's offset 0
        ours = mine or (len(fields) == 5 and start == previous_end and base is not None)
        previous_end = end if ours else None
        if ours and not mine:
            end = min(end, image_end(base))
        if ours and start < end and fields[1][0] == "r" and (not writable or fields[1][1] == "w"):
            yield start, end


def words(data: bytes):
    """(offset, value) of every aligned 8-byte word."""
    return ((at, struct.unpack_from("<Q", data, at)[0]) for at in range(0, len(data) - 7, 8))


def find_in_core_data(value: int) -> list[int]:
    """Addresses of every aligned int64 equal to value in the core's writable data."""
    hits = []
    for start, end in core_mappings(writable=True):
        hits += [start + at for at, word in words(ctypes.string_at(start, end - start)) if word == value % 2**64]
    return hits


def opened_single_pages():
    """The bytes of every inaccessible one-page anonymous mapping (the key's page, the core's hidden
    page, guard pages), each opened for the read and closed again."""
    for start, end in _keyscan.anonymous_mappings("---p", SINGLE_PAGE):
        data = _keyscan.read_opened(start, end)
        if data is not None:
            yield data


def start_again_after_half(data, start_event: int) -> object:
    """The GEMV's first half, the core's start event recorded again (0: none found, honest), then the
    second half: the events bracket only the second half (s20, x14)."""
    first, second = _honest.halves(data)
    _honest.gemv_rows(data, first)
    if start_event:
        record = ctypes.CDLL("libcuda.so.1").cuEventRecord
        record.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        record(start_event, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    _honest.gemv_rows(data, second)
    return data[-1]


def word_through_the_gate(length: int, prot: int, offset: int = HIDDEN_START_EVENT) -> int:
    """A word of the core's call-state page (its start event by default), read with the page opened by
    the core's own gate (the address nvfp4_gate_describe reports, less its mov and syscall) naming
    ``length`` bytes and ``prot``, then closed; 0 where the gate refused."""
    import platform

    from harness.worker import _sealed

    described = (ctypes.c_ulonglong * 64)()
    ctypes.CDLL(_sealed.__file__).nvfp4_gate_describe(described, 64)
    gate = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)(
        described[0] - GATE_BEFORE_RETURN[platform.machine()])
    state_page = described[3]  # [3]: the hidden call-state page
    if not state_page or gate(state_page, length, prot) != 0:
        return 0
    try:
        return struct.unpack_from("<Q", ctypes.string_at(state_page, SINGLE_PAGE), offset)[0]
    finally:
        gate(state_page, SINGLE_PAGE, 0)
