"""/proc/self/mem by a path that changes under the supervisor's reading (issue 40's path race): a
thread flips the last bytes of one buffer between '/proc/self/stat' and '/proc/self/mem' while
the main thread opens it again and again through libc (ctypes lets the flipper run during the
open). The supervisor reads the path before the kernel does, so some opens it reads as 'stat'
reach 'mem'; Landlock, checked on the file the kernel reaches, refuses every one. Any mem
descriptor won ends the worker at once (exit 17), which the suite reads as a mismatch."""

import ctypes
import os
import threading
import time

import _honest

libc = ctypes.CDLL(None, use_errno=True)
path = ctypes.create_string_buffer(b"/proc/self/stat", 32)
tail = ctypes.addressof(path) + len(b"/proc/self/")
stop = threading.Event()


def flip() -> None:
    while not stop.is_set():
        ctypes.memmove(tail, b"mem\0", 4)
        ctypes.memmove(tail, b"stat", 4)


flipper = threading.Thread(target=flip, daemon=True)
flipper.start()
outcomes: dict[str, int] = {}
deadline = time.monotonic() + 3.0
while time.monotonic() < deadline:
    fd = libc.open(path, os.O_RDONLY)
    if fd < 0:
        name = os.strerror(ctypes.get_errno())
        outcomes[name] = outcomes.get(name, 0) + 1
        continue
    if os.readlink(f"/proc/self/fd/{fd}").endswith("/mem"):
        print("won the race: /proc/self/mem is open", flush=True)
        os._exit(17)
    outcomes["stat"] = outcomes.get("stat", 0) + 1
    os.close(fd)
stop.set()
flipper.join()
print("opens:", outcomes)


def custom_kernel(data):
    return _honest.gemv(data)
