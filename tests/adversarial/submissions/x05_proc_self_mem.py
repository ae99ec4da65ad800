"""Read the key and write sealed pages through /proc/self/mem (issue 40, after pygpubench's
proc_mem_bypass exploit): the kernel's own accesses through that file ignore PROT_NONE and mseal.
The key's page is the core's inaccessible 4 KiB anonymous mapping in /proc/self/maps. The syscall
supervisor refuses the open (rule 'proc_mem')."""

import _honest
import _keyscan

try:
    with open("/proc/self/mem", "r+b", buffering=0) as memory:
        for start, end in _keyscan.anonymous_mappings("---p", 4096):
            memory.seek(start)
            print(f"read {len(memory.read(end - start))} bytes of the inaccessible page at {start:#x}")
except OSError as error:
    print("open /proc/self/mem refused:", error)


def custom_kernel(data):
    return _honest.gemv(data)
