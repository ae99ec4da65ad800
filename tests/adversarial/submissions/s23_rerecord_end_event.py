"""Issue 40, re-timing (native code): record the core's own END event again, earlier, on an idle stream.

custom_kernel queues both halves of the work on the caller's stream with an event of its own between
them, and returns. A native thread (a small C library built here with the system's compiler, as
Triton builds its launcher) waits until the core has recorded its end event behind that work, then
until the first half is done, and records the end event again on a stream of its own with nothing
queued: it completes at once, so the events bracket the first half only. The handle is read from
the core's hidden page, opened read-write through the core's own gate in the form the core uses inside
the timed window (one byte: the filter lets that form through unasked, so the supervisor does not
count it; x14 opens it in the counted form and is rejected for that). The second clock's end stamp
still waits for the second half: before issue 40's item 2 the reading subtracted that wait, measured
from the end event, and the gap came out unchanged (the hole); now the subtracted wait is capped at its
calibrated value and every call reads beyond its allowance, so the parent rejects the case."""

import ctypes
import os
import platform
import struct
import subprocess
import tempfile

import _honest
import _window
import torch

from harness.contract import syscall_rules as rules
from harness.worker import _sealed

WATCHER = r"""
#include <dlfcn.h>
#include <pthread.h>
typedef int (*query_fn)(void *);
typedef int (*record_fn)(void *, void *);
typedef int (*context_fn)(void *);
typedef int (*stream_fn)(void **, unsigned);
static void *end_event, *mid_event, *context;
static void *watch(void *unused) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW), *stream = 0;
    query_fn query = (query_fn)dlsym(cuda, "cuEventQuery");
    record_fn record = (record_fn)dlsym(cuda, "cuEventRecord");
    ((context_fn)dlsym(cuda, "cuCtxSetCurrent"))(context);
    ((stream_fn)dlsym(cuda, "cuStreamCreate"))(&stream, 1);
    for (;;) {
        while (query(end_event) != 600) {}  /* the core's end record, behind the work (NOT_READY) */
        if (query(mid_event) == 600) {      /* a call: its first half still queued (not a recheck) */
            while (query(mid_event) == 600) {}
            record(end_event, stream);
        }
        while (query(end_event) == 600) {}
    }
    return unused;
}
int start_watch(void *end, void *mid, void *ctx) {
    pthread_t thread;
    end_event = end; mid_event = mid; context = ctx;
    return pthread_create(&thread, 0, watch, 0);
}
"""


def end_event_handle() -> int | None:
    """The core's end event, read on its hidden page through the core's gate (nvfp4_gate_describe)."""
    described = (ctypes.c_ulonglong * 64)()
    ctypes.CDLL(_sealed.__file__).nvfp4_gate_describe(described, 64)
    gate = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)(
        described[0] - _window.GATE_BEFORE_RETURN[platform.machine()])
    page = described[3]
    if gate(page, rules.STATE_WINDOW_BYTES, 3) != 0:
        return None
    try:
        return struct.unpack_from("<Q", ctypes.string_at(page, _window.SINGLE_PAGE), _window.HIDDEN_END_EVENT)[0]
    finally:
        gate(page, _window.SINGLE_PAGE, 0)


def start_watcher(mid: torch.cuda.Event) -> bool:
    handle = end_event_handle()
    if not handle:
        return False
    folder = tempfile.mkdtemp()
    source, library = os.path.join(folder, "watch.c"), os.path.join(folder, "watch.so")
    with open(source, "w") as file:
        file.write(WATCHER)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source, "-ldl", "-lpthread"], check=True)
    context = ctypes.c_void_p()
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuCtxGetCurrent(ctypes.byref(context))
    watcher = ctypes.CDLL(library)
    watcher.start_watch.argtypes = [ctypes.c_void_p] * 3
    return watcher.start_watch(handle, mid.cuda_event, context) == 0


MID = torch.cuda.Event() if torch.cuda.is_available() else None
WATCHING = MID is not None and start_watcher(MID)


def custom_kernel(data):
    first, second = _honest.halves(data)
    _honest.gemv_rows(data, first)
    if WATCHING:
        MID.record()
    _honest.gemv_rows(data, second)
    return data[-1]
