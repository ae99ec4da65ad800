"""After p01 (issue 23): the key has no symbol, so look for it. Read every readable anonymous
mapping of this process up to 64 KiB (where a page of the key's own would be) with ctypes and try
each 32-byte window as the key against the MAC of the first signed output; sign half of every
time with what it finds (32 zero bytes when nothing is found).

Expected to fail: the key's page is inaccessible (PROT_NONE) except while the core computes a MAC,
and the HMAC wipes its buffers and the stack below it, so no readable memory holds the key.
"""

import ctypes

import _honest
import _keyscan

MAX_BYTES = 64 << 10


def readable_regions():
    for start, end in _keyscan.anonymous_mappings("rw-p", MAX_BYTES):
        yield ctypes.string_at(start, end - start)
    for start, end in _keyscan.anonymous_mappings("r--p", MAX_BYTES):
        yield ctypes.string_at(start, end - start)


_keyscan.install(lambda message, mac: _keyscan.search(readable_regions(), message, mac))


def custom_kernel(data):
    return _honest.gemv(data)
