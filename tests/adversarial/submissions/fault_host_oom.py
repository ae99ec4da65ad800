"""Fault: asks for 1 TiB of host memory. The CPU worker's 16 GiB RLIMIT_AS (and, on a GPU host, the
kernel's overcommit check) turn it into a MemoryError instead of an OOM kill of the machine."""


def custom_kernel(data):
    hoard = bytearray(1 << 40)
    return hoard
