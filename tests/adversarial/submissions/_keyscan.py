"""What p01b and p01c share: look for the compiled core's MAC key in this process's memory.

Not a submission (its name starts with an underscore). The worker's call and send are shadowed
as in p01: the first signed output gives a message and its MAC, against which every 32-byte window
of the memory searched is tried as the key (the key is 32 random bytes at any offset). With the
key found, every later time is halved and signed again; with none found the attack signs with 32
zero bytes, which the parent rejects.
"""

import ctypes
import hmac
from pathlib import Path

import _reach

from harness.contract import protocol
from harness.judge.worker_link import seal, worker_spawn

CLOCK_FIELDS = ("event_us", "clock_us", "clock_gap_us", "clock_allowance_us")  # Output's, in the MAC's order
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PROT_NONE, PROT_READ = 0, 1


def anonymous_mappings(permissions, max_bytes):
    """(start, end) of every mapping with no file behind it, these permissions, at most max_bytes."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) == 5 and fields[1] == permissions:
            start, end = (int(part, 16) for part in fields[0].split("-"))
            if end - start <= max_bytes:
                yield start, end


def read_opened(start, end):
    """A PROT_NONE mapping's bytes: made readable for the read, closed again (None if refused)."""
    if LIBC.mprotect(start, end - start, PROT_READ) != 0:
        return None
    try:
        return ctypes.string_at(start, end - start)
    finally:
        LIBC.mprotect(start, end - start, PROT_NONE)


def search(regions, message, mac):
    """The 32-byte window of any region's bytes under which message has this MAC, else None."""
    for data in regions:
        if data is None:
            continue
        for at in range(len(data) - worker_spawn.KEY_BYTES + 1):
            candidate = data[at:at + worker_spawn.KEY_BYTES]
            if hmac.digest(candidate, message, "sha256") == mac:
                return candidate
    return None


def install(find_key):
    """Forge every output with the key find_key(message, mac) returns for the first one."""
    worker, timer = _reach.worker(), _reach.timer()
    requests, found = [], []
    original_call = worker.call

    def remember(request):
        requests.append(request)
        original_call(request)

    def forge(header, parts):
        if header.get("op") != "output" or not requests or "mac" not in header:
            return header, parts
        request = requests[-1]
        entries = [entry for entry, _ in parts]
        tensors = [protocol.tensor_from_wire(entry, payload) for entry, payload in parts]
        digest = seal.output_digest(entries, tensors)
        fields = (request.index, int(request.case["seed"]))
        flags = (timer.overhead_us, bool(header["unfinished"]), bool(header["exposed"]))
        clock = seal.ClockReading(*(header.get(name, 0.0) for name in CLOCK_FIELDS))
        if not found:
            message = seal.call_message(*fields, header["time_us"], *flags, digest, clock)
            found.append(find_key(message, bytes.fromhex(header["mac"])) or bytes(worker_spawn.KEY_BYTES))
        time_us = header["time_us"] * 0.5
        mac = seal.call_mac(found[0], *fields, time_us, *flags, digest, clock)
        return {**header, "time_us": time_us, "mac": mac.hex()}, parts

    worker.call = remember
    _reach.shadow_send(forge)
