"""/proc/self/mem behind a symlink of the submission's own, in its working folder (relative path,
through /proc/thread-self): the supervisor follows the link as the kernel would and refuses the open
(rule 'proc_mem')."""

import os

import _honest

os.symlink("/proc/thread-self/../../mem", "notes.txt")
try:
    os.close(os.open("notes.txt", os.O_RDONLY))
    print("mem opened through the symlink")
except OSError as error:
    print("open through the symlink refused:", error)


def custom_kernel(data):
    return _honest.gemv(data)
