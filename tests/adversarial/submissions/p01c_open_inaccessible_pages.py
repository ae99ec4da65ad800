"""After p01b (issue 23): what native code can always do. The key's page is inaccessible, but
/proc/self/maps lists it (a small anonymous mapping with no access) and nothing stops this process
from mprotect-ing its own pages: open every such mapping up to 64 KiB for reading, try each
32-byte window as the key against the MAC of the first signed output, close it again, and sign
half of every time with the key found.

A KNOWN HOLE (docs/security.md, "Native code in the same process"): a process that must use a key
can always be made to give it up by code running inside it. The page cannot be sealed (the core
must open it for every MAC). What stops a forged time is outside the worker: the datasheet
ceiling on a GPU, and the organizer's re-run of top entries in a sandbox with a fresh secret.
"""

import _honest
import _keyscan

MAX_BYTES = 64 << 10


def inaccessible_regions():
    for start, end in _keyscan.anonymous_mappings("---p", MAX_BYTES):
        yield _keyscan.read_opened(start, end)


_keyscan.install(lambda message, mac: _keyscan.search(inaccessible_regions(), message, mac))


def custom_kernel(data):
    return _honest.gemv(data)
