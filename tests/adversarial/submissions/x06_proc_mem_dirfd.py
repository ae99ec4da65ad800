"""/proc/self/mem by another name: open /proc/self as a directory, then 'mem' relative to it (openat
with a directory fd), as a path check that only compares strings would let through. The syscall
supervisor follows the directory fd and refuses the open (rule 'proc_mem')."""

import os

import _honest

directory = os.open("/proc/self", os.O_PATH | os.O_DIRECTORY)
try:
    os.close(os.open("mem", os.O_RDONLY, dir_fd=directory))
    print("mem opened through the directory fd")
except OSError as error:
    print("openat(/proc/self, 'mem') refused:", error)


def custom_kernel(data):
    return _honest.gemv(data)
