"""Issue 40, re-timing (native code): record the core's own END event again, earlier, on an idle stream.

custom_kernel queues both halves of the work on the caller's stream, an event of its own between
them, and returns. A native thread (a small C library built here with the system's compiler, as
Triton builds its launcher) waits until the core has recorded its end event behind that work, then
until the first half is done, and records the end event again on a stream of its own with nothing
queued: it completes at once, so the events bracket the first half only. The caller's stream waits
first on a device word (cuStreamWaitValue32) that the thread writes once it has seen the end event
queued, so the first half is still to run when the core records the end: without that gate the GPU
could finish the first half before the host got there. And nothing in custom_kernel may make the host
wait for the stream (the honest decode's code table is made once, not copied from a Python list each
call: that copy waited for the gate, and the row acted on no call in run 17). It raises if it never
acted: a row that cannot act tests nothing.

The handle is read from the core's hidden page, opened through the core's own gate. Every such
opening is counted by the syscall supervisor (x14, x16 and x17 are rejected for it), so this row
runs without the supervisor (its `sandbox` in verdicts.yml): it tests the second clock, the backstop
for a handle found any other way. The second clock's end stamp still waits for the second half:
before issue 40's item 2 the reading subtracted that wait, measured from the end event, and the gap
came out unchanged (the hole); now the subtracted wait is capped at its calibrated value and every
call reads beyond its allowance, so the parent rejects the case."""

import ctypes
import os
import subprocess
import tempfile

import _honest
import _window
import torch

WATCHER = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
typedef int (*query_fn)(void *);
typedef int (*record_fn)(void *, void *);
typedef int (*context_fn)(void *);
typedef int (*stream_fn)(void **, unsigned);
typedef int (*event_fn)(void **, unsigned);
typedef int (*alloc_fn)(unsigned long long *, size_t);
typedef int (*memset_fn)(unsigned long long, unsigned, size_t);
typedef int (*value_fn)(void *, unsigned long long, unsigned, unsigned);
static void *end_event, *mid_event, *context, *own;
static unsigned long long word;        /* the device word the caller's stream waits on */
static volatile unsigned armed, released, acted;
static query_fn query;
static record_fn record;
static context_fn set_current;
static value_fn wait_value, write_value;
static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static void *watch(void *unused) {
    set_current(context);
    for (;;) {
        while (armed == released) {}
        unsigned call = armed;
        double until = now_ms() + 50.0; /* a call the core does not time records no end event */
        while (query(end_event) != 600 && now_ms() < until) {}
        int queued = query(end_event) == 600;
        write_value(own, word, call, 0); /* the caller's stream goes on */
        released = call;
        if (queued) {
            while (query(mid_event) == 600) {} /* the first half done */
            record(end_event, own);
            acted++;
        }
    }
    return 0;
}
int start_watch(void *end, void *ctx) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    pthread_t thread;
    query = (query_fn)dlsym(cuda, "cuEventQuery");
    record = (record_fn)dlsym(cuda, "cuEventRecord");
    set_current = (context_fn)dlsym(cuda, "cuCtxSetCurrent");
    wait_value = (value_fn)dlsym(cuda, "cuStreamWaitValue32_v2");
    write_value = (value_fn)dlsym(cuda, "cuStreamWriteValue32_v2");
    end_event = end; context = ctx;
    if (((stream_fn)dlsym(cuda, "cuStreamCreate"))(&own, 1) || ((event_fn)dlsym(cuda, "cuEventCreate"))(&mid_event, 0))
        return -1;
    if (((alloc_fn)dlsym(cuda, "cuMemAlloc_v2"))(&word, 4) || ((memset_fn)dlsym(cuda, "cuMemsetD32_v2"))(word, 0, 1))
        return -1;
    return pthread_create(&thread, 0, watch, 0);
}
int gate(void *stream, unsigned call) { /* the caller's stream waits until the thread lets call go */
    armed = call;
    return wait_value(stream, word, call, 0 /* CU_STREAM_WAIT_VALUE_GEQ */);
}
int mark_middle(void *stream) { return record(mid_event, stream); }
unsigned acted_on(void) { return acted; }
"""


def end_event_handle() -> int | None:
    """The core's end event, read on its hidden page opened through the core's gate."""
    return _window.word_through_the_gate(4096, 3, _window.HIDDEN_END_EVENT) or None


def start_watcher():
    """The built library with its thread running; raises where it cannot start (a row that cannot act
    would pass as its honest twin and test nothing)."""
    handle = end_event_handle()
    if not handle:
        raise RuntimeError("s23: the core's gate did not open its call-state page: no end event to record")
    folder = tempfile.mkdtemp()
    source, library = os.path.join(folder, "watch.c"), os.path.join(folder, "watch.so")
    with open(source, "w") as file:
        file.write(WATCHER)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source, "-ldl", "-lpthread"], check=True)
    context = ctypes.c_void_p()
    ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent(ctypes.byref(context))
    watcher = ctypes.CDLL(library)
    watcher.start_watch.argtypes = [ctypes.c_void_p] * 2
    watcher.gate.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    watcher.mark_middle.argtypes = [ctypes.c_void_p]
    watcher.acted_on.restype = ctypes.c_uint
    if watcher.start_watch(handle, context) != 0:
        raise RuntimeError("s23: the watcher's stream, event or device word could not be made")
    return watcher


WATCHER_LIBRARY = start_watcher() if torch.cuda.is_available() else None
CALLS_BEFORE_IT_MUST_HAVE_ACTED = 20
calls = 0


def custom_kernel(data):
    global calls
    first, second = _honest.halves(data)
    if WATCHER_LIBRARY is not None:
        calls += 1
        stream = torch.cuda.current_stream().cuda_stream
        if WATCHER_LIBRARY.gate(stream, calls) != 0:
            raise RuntimeError("s23: cuStreamWaitValue32 failed: the row cannot gate the caller's stream here")
        if calls > CALLS_BEFORE_IT_MUST_HAVE_ACTED and WATCHER_LIBRARY.acted_on() == 0:
            raise RuntimeError(f"s23 never saw the core's end event queued in {calls} calls: the row tests nothing")
    _honest.gemv_rows(data, first)
    if WATCHER_LIBRARY is not None:
        WATCHER_LIBRARY.mark_middle(torch.cuda.current_stream().cuda_stream)
    _honest.gemv_rows(data, second)
    return data[-1]
