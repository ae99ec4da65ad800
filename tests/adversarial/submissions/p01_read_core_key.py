"""pygpubench exploits/submission_aes_key_recovery.py, rewritten for this harness: read the compiled
core's MAC key out of its own process memory and sign a faster time.

Closed by issue 23 (docs/security.md, "Native code in the same process"): the key used to be a
static of harness/worker/_sealed*.so, at an offset its ELF symbol table named, and this file read
it with ctypes and signed half of every time; it passed at half its honest twin's time on the CPU
and on an H100. The key now lives on an anonymous page at a random address that no symbol names,
so the lookup finds nothing; the attack goes on with 32 zero bytes as its guess, and the parent
rejects the first forged MAC. p01b and p01c try the next steps: scanning memory for the key.
"""

import ctypes
import struct
import sys
from pathlib import Path

import _honest
import _reach

from harness.contract import protocol
from harness.judge.worker_link import seal, worker_spawn


def _symbol_offset(path, name):
    """st_value of a symbol in an ELF64 little-endian file's .symtab."""
    data = Path(path).read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for at in range(offset, offset + size, entsize):
            st_name, _, _, _, st_value, _ = struct.unpack_from("<IBBHQQ", data, at)
            if data[strtab + st_name:data.index(b"\0", strtab + st_name)] == name:
                return st_value
    raise LookupError(name)


def _base_address(path):
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[5] == path and int(fields[2], 16) == 0:
            return int(fields[0].split("-")[0], 16)
    raise LookupError(path)


core = sys.modules["harness.worker._sealed"].__file__
try:
    KEY = ctypes.string_at(_base_address(core) + _symbol_offset(core, b"key"), worker_spawn.KEY_BYTES)
except LookupError:  # no symbol names the key any more: sign anyway, with a guess
    KEY = bytes(worker_spawn.KEY_BYTES)
worker = _reach.worker()
timer = _reach.timer()
requests = []
original_call = worker.call


def remember(request):
    requests.append(request)
    original_call(request)


def forge(header, parts):
    if header.get("op") == "output" and requests:
        request = requests[-1]
        time_us = header["time_us"] * 0.5
        entries = [entry for entry, _ in parts]
        tensors = [protocol.tensor_from_wire(entry, payload) for entry, payload in parts]
        digest = seal.output_digest(entries, tensors)
        clock = seal.ClockReading(*(header.get(name, 0.0) for name in
                                    ("event_us", "clock_us", "clock_gap_us", "clock_allowance_us")))
        mac = seal.call_mac(KEY, request.index, int(request.case["seed"]), time_us, timer.overhead_us,
                            bool(header["unfinished"]), bool(header["exposed"]), digest, clock)
        header = {**header, "time_us": time_us, "mac": mac.hex()}
    return header, parts


worker.call = remember
_reach.shadow_send(forge)


def custom_kernel(data):
    return _honest.gemv(data)
