/* harness._sealed: the timed loop and the result MAC, out of reach of the submission's Python.
 *
 * Everything that decides a time lives in this file's memory: the per-run key (read from a pipe
 * the parent wrote, then closed), the L2 flush buffer, the events, the sleep kernel, the measured
 * event overhead and the submission's bound custom_kernel. Python receives only finished results:
 * (time, output bytes, MAC over call index, seed, time, overhead, the unfinished and exposed flags
 * and output digest). See docs/security.md for what this does and does not stop.
 *
 * Where things are (issue 23):
 * - The key has no symbol and no fixed place: it sits at a random offset of one anonymous page
 *   mapped at a random address, inaccessible (PROT_NONE) except while a MAC is computed. That
 *   page cannot be sealed (the core must open it for every MAC); /proc/self/maps lists it, so
 *   native code that looks for it there and mprotects it finds the key (p01c). For the same
 *   reason the page's address is kept plainly (in the sealed state page): masking it would hide
 *   nothing that the maps file does not show.
 * - What init fixes (driver entry points, stream, events, flush buffer, torch entry points, the
 *   key page's address) lives in pages of their own that init makes read-only and, where the
 *   kernel has mseal(2), seals; so are the core's code, read-only data and GOT (linked -z now).
 * - From the flush to the MAC the collector is off and the only Python the core calls is
 *   custom_kernel and the torch entry points captured at init. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuda_driver.h"
#include "sealed_outputs.h"
#include "sha256.h"

#define KEY_BYTES 32
#define OVERHEAD_ROUNDS 5
#define OVERHEAD_SAMPLES 21
#define OVERHEAD_MAX_US 8.0
#define OVERHEAD_SPREAD_MAX_US 0.5
#define MAX_OUTPUT_BYTES (1ULL << 31)
#define MAX_OUTPUTS 64
#define GRAPH_KERNELS 100
#define MIN_CALL_SLEEP_US 100.0
/* A timed call's queued sleep is at least this long: on an H100 a ~4 us kernel read 8.16 us behind
 * a 20 us sleep and 5.02 us behind 100 us or 1000 us (host launch latency leaked in; 2026-11-23). */
#ifndef SYS_mseal
#define SYS_mseal 462  /* Linux 6.10, the same number on x86_64 and arm64 */
#endif

/* Set by init, before the submission exists, then read-only (seal_core). A page of its own. */
typedef union {
    struct {
        int keyed, on_gpu;
        int overhead_from_graph;  /* 1: graph replay is the reference; 0: fell back to kernel pairs */
        uint8_t *key_page;        /* KEY_BYTES at key_offset; the rest of the page is random filler */
        size_t key_offset;
        CUcontext context;
        CUstream stream, capture_stream;
        CUdeviceptr flush_buffer;
        size_t flush_bytes;
        CUevent start_event, end_event;
        CUfunction sleep_kernel, empty_kernel;
        torch_hooks hooks;
    };
    unsigned char page[CORE_PAGE_BYTES];
} core_state;
static core_state core __attribute__((aligned(CORE_PAGE_BYTES)));

/* Changed after init: what the recheck adopts, the call bookkeeping, the output buffers. */
static int busy;
static long long last_index = -1;
static PyObject *kernel;
static double overhead_us, overhead_spread_us;
static uint8_t *host_copy[2];
static size_t host_capacity;

/* ---- the key ---------------------------------------------------------------------------------- */

/* One anonymous page at a random address (MAP_FIXED_NOREPLACE at a random hint below 2^44; a
 * kernel-chosen address where no hint is free or the flag is unknown). */
static uint8_t *random_page(void) {
    for (int attempt = 0; attempt < 32; attempt++) {
        uint64_t draw;
        if (getrandom(&draw, sizeof draw, 0) != sizeof draw) break;
        uintptr_t hint = (uintptr_t)(((draw % ((1ULL << 44) - (1ULL << 32))) + (1ULL << 32)) & ~4095ULL);
        void *page = mmap((void *)hint, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                          -1, 0);
        if (page == (void *)hint) return page;
        if (page != MAP_FAILED) munmap(page, 4096);  /* a kernel before 4.17 took the hint as a hint */
    }
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return page == MAP_FAILED ? NULL : page;
}

/* Read the key from the parent's pipe straight into its page (no copy on the stack). */
static int load_key(int fd) {
    uint8_t *page = random_page();
    uint16_t offset;
    if (!page) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    for (size_t filled = 0; filled < 4096;) {  /* more than 256 bytes may come in parts */
        ssize_t n = getrandom(page + filled, 4096 - filled, 0);
        if (n < 0 && errno != EINTR) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
        filled += n > 0 ? (size_t)n : 0;
    }
    if (getrandom(&offset, sizeof offset, 0) != sizeof offset) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    madvise(page, 4096, MADV_DONTDUMP);
    madvise(page, 4096, MADV_WIPEONFORK);  /* a child the submission forks gets zeros (Linux 4.14) */
    core.key_offset = offset % (4096 - KEY_BYTES + 1);
    size_t got = 0;
    while (got < KEY_BYTES) {
        ssize_t n = read(fd, page + core.key_offset + got, KEY_BYTES - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (got != KEY_BYTES || mprotect(page, 4096, PROT_NONE)) {
        explicit_bzero(page, 4096);
        PyErr_SetString(PyExc_RuntimeError, "the key pipe held no 32-byte key");
        return -1;
    }
    core.key_page = page;
    return 0;
}

/* Overwrite the stack below the caller's frame, where the HMAC's frames were: the compiler may
 * have spilled the key, a padded key block or a midstate there. */
__attribute__((noinline)) static void scrub_stack(void) {
    uint8_t area[16384];
    explicit_bzero(area, sizeof area);
}

/* HMAC-SHA256 under the run key: the key page is readable only inside this function. */
static int mac_with_key(const uint8_t *message, size_t size, uint8_t mac[32]) {
    if (mprotect(core.key_page, 4096, PROT_READ)) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    hmac_sha256(core.key_page + core.key_offset, KEY_BYTES, message, size, mac);
    int closed = mprotect(core.key_page, 4096, PROT_NONE);
    scrub_stack();
    if (closed) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    return 0;
}

/* ---- sealing what init fixed -------------------------------------------------------------------- */

/* Read-only, then sealed where the kernel has mseal: 0 sealed, else the errno mseal gave (-1: not
 * even read-only). */
static int protect_and_seal(void *start, size_t bytes) {
    if (mprotect(start, bytes, PROT_READ)) return -1;
    return syscall(SYS_mseal, start, bytes, 0UL) == 0 ? 0 : errno;
}

typedef struct { int sealed, failed, first_errno; } seal_tally;

static void tally(seal_tally *t, int result) {
    if (result == 0) { t->sealed++; return; }
    if (!t->failed++) t->first_errno = result;
}

/* Seal the non-writable segments of this extension (headers, code, read-only data, and the GOT,
 * which -z relro -z now made read-only at load): nobody can mprotect them writable again. */
static int seal_own_segment(struct dl_phdr_info *info, size_t size, void *data) {
    seal_tally *t = data;
    Dl_info self;
    if (!dladdr((void *)&seal_own_segment, &self) || (void *)info->dlpi_addr != self.dli_fbase) return 0;
    uintptr_t mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
        if (ph->p_type == PT_LOAD && !(ph->p_flags & PF_W)) {
            end = (end + mask) & ~mask;
        } else if (ph->p_type == PT_GNU_RELRO) {
            end &= ~mask;  /* the loader leaves the last partial page writable, with .data */
        } else {
            continue;
        }
        start &= ~mask;
        if (end > start) tally(t, syscall(SYS_mseal, (void *)start, end - start, 0UL) == 0 ? 0 : errno);
    }
    return 1;
}

/* What init fixed, made read-only and sealed; returns the line the worker's 'ready' reports. */
static PyObject *seal_core(void) {
    seal_tally tables = {0}, code = {0};
    long page = sysconf(_SC_PAGESIZE);
    if (page == CORE_PAGE_BYTES) {
        tally(&tables, protect_and_seal(&core, sizeof core));
        tally(&tables, protect_and_seal(&cu, sizeof cu));
    }
    dl_iterate_phdr(seal_own_segment, &code);
    const char *how = tables.sealed == 2 ? "read-only and sealed"
                      : page != CORE_PAGE_BYTES ? "writable (pages larger than 4 KiB)"
                      : tables.first_errno == -1 ? "writable (mprotect refused)"
                      : tables.first_errno == ENOSYS ? "read-only, not sealed (this kernel has no mseal)"
                                                      : "read-only, not sealed (mseal refused)";
    return PyUnicode_FromFormat(
        "key on a page at a random address, no access outside the MAC; tables %s; code %s; sha256 %s", how,
        code.sealed && !code.failed ? "sealed" : code.sealed ? "partly sealed" : "not sealed", sha256_backend());
}

static const char PTX[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry sleep_ns(.param .u64 ns)\n{\n.reg .u64 %n, %t0, %t1, %d;\n.reg .pred %p;\n"
    "ld.param.u64 %n, [ns];\nmov.u64 %t0, %globaltimer;\nWAIT:\nmov.u64 %t1, %globaltimer;\n"
    "sub.u64 %d, %t1, %t0;\nsetp.lt.u64 %p, %d, %n;\n@%p bra WAIT;\nret;\n}\n"
    ".visible .entry empty()\n{\nret;\n}\n";

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int queue_sleep(double sleep_us) {
    unsigned long long ns = (unsigned long long)(sleep_us * 1e3);
    void *params[] = {&ns};
    CUI(cu.LaunchKernel(core.sleep_kernel, 1, 1, 1, 1, 1, 1, 0, core.stream, params, NULL), "sleep kernel launch");
    return 0;
}

/* Event time (us) of `kernels` back-to-back empty kernels behind a queued sleep. */
static double empty_kernels_us(int kernels) {
    float ms = -1.0f;
    if (cu.StreamSynchronize(core.stream) || queue_sleep(20.0)) return -1.0;
    cu.EventRecord(core.start_event, core.stream);
    for (int i = 0; i < kernels; i++) cu.LaunchKernel(core.empty_kernel, 1, 1, 1, 1, 1, 1, 0, core.stream, NULL, NULL);
    cu.EventRecord(core.end_event, core.stream);
    if (cu.EventSynchronize(core.end_event) || cu.EventElapsedTime(&ms, core.start_event, core.end_event)) return -1.0;
    return ms * 1e3;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count) {
    qsort(values, count, sizeof *values, compare_doubles);
    return values[count / 2];
}

/* Per-kernel time (us) of GRAPH_KERNELS empty kernels replayed as one CUDA graph, behind a sleep:
 * what a kernel costs inside a stream of work. -1 when graphs are not available here. */
static double graph_empty_kernel_us(void) {
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    float ms = -1.0f;
    double result = -1.0;
    if (!core.capture_stream && cu.StreamCreate(&core.capture_stream, CU_STREAM_NON_BLOCKING)) return -1.0;
    if (cu.StreamBeginCapture(core.capture_stream, CU_STREAM_CAPTURE_MODE_RELAXED)) return -1.0;
    for (int i = 0; i < GRAPH_KERNELS; i++) cu.LaunchKernel(core.empty_kernel, 1, 1, 1, 1, 1, 1, 0, core.capture_stream, NULL, NULL);
    if (cu.StreamEndCapture(core.capture_stream, &graph) || !graph) return -1.0;
    if (!cu.GraphInstantiate(&exec, graph, 0) && !cu.GraphLaunch(exec, core.stream) && !cu.StreamSynchronize(core.stream) &&
        !queue_sleep(20.0) && !cu.EventRecord(core.start_event, core.stream) && !cu.GraphLaunch(exec, core.stream) &&
        !cu.EventRecord(core.end_event, core.stream) && !cu.EventSynchronize(core.end_event) &&
        !cu.EventElapsedTime(&ms, core.start_event, core.end_event))
        result = ms * 1e3 / GRAPH_KERNELS;
    if (exec) cu.GraphExecDestroy(exec);
    cu.GraphDestroy(graph);
    return result;
}

/* The fixed cost an event pair adds to one kernel: the event time of one empty kernel minus that
 * kernel's per-call time in a replayed graph (the reference scripts/timing_validation.py checks
 * against). Where graphs fail, the marginal cost of a second kernel in the stream stands in for
 * the graph time (it reads about 1.1 us less overhead on an H100). OVERHEAD_ROUNDS rounds; returns
 * the median round, *spread is max - min. */
static double measure_overhead(double *spread) {
    double rounds[OVERHEAD_ROUNDS], one[OVERHEAD_SAMPLES], two[OVERHEAD_SAMPLES];
    for (int r = 0; r < OVERHEAD_ROUNDS; r++) {
        for (int s = 0; s < OVERHEAD_SAMPLES; s++) {
            one[s] = empty_kernels_us(1);
            two[s] = core.overhead_from_graph ? 0.0 : empty_kernels_us(2);
            if (one[s] < 0 || two[s] < 0) return -1.0;
        }
        double single = median(one, OVERHEAD_SAMPLES), in_stream;
        if (core.overhead_from_graph) {
            double graph[3];
            for (int g = 0; g < 3; g++) graph[g] = graph_empty_kernel_us();
            in_stream = median(graph, 3);
        } else {
            in_stream = median(two, OVERHEAD_SAMPLES) - single;
        }
        if (in_stream < 0) return -1.0;
        rounds[r] = single - in_stream;
    }
    qsort(rounds, OVERHEAD_ROUNDS, sizeof *rounds, compare_doubles);
    *spread = rounds[OVERHEAD_ROUNDS - 1] - rounds[0];
    return rounds[OVERHEAD_ROUNDS / 2];
}

static int overhead_consistent(double value, double spread) {
    return value >= 0.0 && value <= OVERHEAD_MAX_US && spread <= OVERHEAD_SPREAD_MAX_US;
}

static int init_gpu(unsigned long long stream_handle, unsigned long long l2_bytes) {
    CUmodule module;
    if (load_driver()) return -1;
    core.stream = (CUstream)(uintptr_t)stream_handle;
    CUI(cu.CtxGetCurrent(&core.context), "cuCtxGetCurrent");
    if (!core.context) { PyErr_SetString(PyExc_RuntimeError, "no current CUDA context (initialize torch.cuda first)"); return -1; }
    core.flush_bytes = 2 * l2_bytes > (1u << 20) ? 2 * l2_bytes : (1u << 20);
    CUI(cu.MemAlloc(&core.flush_buffer, core.flush_bytes), "flush buffer allocation");
    CUI(cu.EventCreate(&core.start_event, CU_EVENT_DEFAULT), "cuEventCreate");
    CUI(cu.EventCreate(&core.end_event, CU_EVENT_DEFAULT), "cuEventCreate");
    CUI(cu.ModuleLoadData(&module, PTX), "loading the sleep kernel (PTX JIT)");
    CUI(cu.ModuleGetFunction(&core.sleep_kernel, module, "sleep_ns"), "cuModuleGetFunction");
    CUI(cu.ModuleGetFunction(&core.empty_kernel, module, "empty"), "cuModuleGetFunction");
    core.overhead_from_graph = graph_empty_kernel_us() > 0.0;
    for (int attempt = 0; attempt < 3; attempt++) {
        overhead_us = measure_overhead(&overhead_spread_us);
        if (overhead_us < -0.5) return cuda_failed(1, "overhead measurement") ? -1 : -1;
        if (overhead_consistent(overhead_us, overhead_spread_us)) return 0;
    }
    PyErr_Format(PyExc_RuntimeError, "harness fault: event overhead %.2f us, spread %.2f us over %d rounds, "
                 "three times (bounds %.1f us, spread %.1f us)", overhead_us, overhead_spread_us, OVERHEAD_ROUNDS,
                 OVERHEAD_MAX_US, OVERHEAD_SPREAD_MAX_US);
    return -1;
}

/* init(key_fd, stream_handle or None, l2_bytes, hooks): once per process, before the import.
 * Returns (overhead_us, spread_us, overhead from graphs, protection report). */
static PyObject *sealed_init(PyObject *self, PyObject *args) {
    int fd;
    PyObject *stream_handle, *hook_dict;
    unsigned long long l2_bytes;
    if (!PyArg_ParseTuple(args, "iOKO!", &fd, &stream_handle, &l2_bytes, &PyDict_Type, &hook_dict)) return NULL;
    if (core.keyed) { PyErr_SetString(PyExc_RuntimeError, "the sealed timer is already initialized"); return NULL; }
    int loaded = load_key(fd);
    close(fd);
    if (loaded || capture_hooks(hook_dict, &core.hooks)) return NULL;
    if (stream_handle != Py_None) {
        unsigned long long handle = PyLong_AsUnsignedLongLong(stream_handle);
        if (PyErr_Occurred() || init_gpu(handle, l2_bytes)) return NULL;
        core.on_gpu = 1;
    }
    core.keyed = 1;
    PyObject *report = seal_core();  /* nothing in `core` or `cu` may be written after this */
    if (!report) return NULL;
    return Py_BuildValue("(ddON)", overhead_us, overhead_spread_us, core.overhead_from_graph ? Py_True : Py_False,
                         report);
}

/* bind(loader, path): loader(path) imports the submission; its custom_kernel is the only function
 * time_call will ever call. Once per process: a second bind (the submission's own) is refused. */
static PyObject *sealed_bind(PyObject *self, PyObject *args) {
    PyObject *loader, *path;
    if (!PyArg_ParseTuple(args, "OO", &loader, &path)) return NULL;
    if (!core.keyed || kernel || busy) { PyErr_SetString(PyExc_RuntimeError, "bind: not initialized or already bound"); return NULL; }
    busy = 1;
    PyObject *module = PyObject_CallOneArg(loader, path);
    busy = 0;
    if (!module) return NULL;
    PyObject *found = PyObject_GetAttrString(module, "custom_kernel");
    Py_DECREF(module);
    if (!found) { PyErr_Clear(); Py_RETURN_FALSE; }
    if (!PyCallable_Check(found)) { Py_DECREF(found); Py_RETURN_FALSE; }
    kernel = found;
    Py_RETURN_TRUE;
}


/* ---- one timed call ------------------------------------------------------------------------- */

static int reserve_host(size_t bytes) {
    if (bytes <= host_capacity) return 0;
    for (int i = 0; i < 2; i++) {
        if (core.on_gpu) {
            if (host_copy[i]) cu.MemFreeHost(host_copy[i]);
            host_copy[i] = NULL;
            CUI(cu.MemAllocHost((void **)&host_copy[i], bytes), "pinned host allocation");
        } else {
            free(host_copy[i]);
            if (!(host_copy[i] = malloc(bytes))) { PyErr_NoMemory(); return -1; }
        }
    }
    host_capacity = bytes;
    return 0;
}

/* Queue the copies of every output right behind the end event, then (all streams finished) copy
 * again: a difference is work the submission left running after it returned. */
static int copy_outputs(output_view *views, int count, size_t total) {
    size_t at = 0;
    if (reserve_host(total ? total : 1)) return -1;
    for (int pass = 0; pass < (core.on_gpu ? 2 : 1); pass++) {
        at = 0;
        for (int i = 0; i < count; i++) {
            if (core.on_gpu && views[i].nbytes)
                CUI(cu.MemcpyDtoHAsync(host_copy[pass] + at, views[i].pointer, views[i].nbytes, core.stream), "output copy");
            else if (views[i].nbytes)
                memcpy(host_copy[pass] + at, (const void *)(uintptr_t)views[i].pointer, views[i].nbytes);
            at += views[i].nbytes;
        }
        if (core.on_gpu) {
            CUI(cu.StreamSynchronize(core.stream), "synchronize after the output copy");
            CUI(cu.CtxSynchronize(), "synchronize every stream");
        }
    }
    return 0;  /* the two copies are compared with the digest (digest_outputs) */
}

static int start_timing(double sleep_us) {
    CUI(cu.CtxSetCurrent(core.context), "cuCtxSetCurrent");
    CUI(cu.StreamSynchronize(core.stream), "synchronize before the call");
    cu.CtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0);  /* best effort: not every device has it */
    cu.CtxResetPersistingL2Cache();
    CUI(cu.MemsetD8Async(core.flush_buffer, 0, core.flush_bytes, core.stream), "L2 flush");
    if (queue_sleep(sleep_us > MIN_CALL_SLEEP_US ? sleep_us : MIN_CALL_SLEEP_US)) return -1;
    CUI(cu.EventRecord(core.start_event, core.stream), "start event");
    return 0;
}

static PyObject *seal_call(long long index, unsigned long long seed, PyObject *result, double host_us, int exposed) {
    output_view views[MAX_OUTPUTS] = {{0}};
    PyObject *items, *structure, *outputs = NULL, *answer = NULL;
    int count, unfinished = 0, modes;
    size_t total = 0;
    float ms = 0.0f;
    if (PyList_CheckExact(result) || PyTuple_CheckExact(result)) {
        items = PySequence_Tuple(result);
        structure = PyUnicode_FromString("list");
    } else {
        items = PyTuple_Pack(1, result);
        structure = PyUnicode_FromString("tensor");
    }
    count = (int)PyTuple_GET_SIZE(items);
    int well_formed = count <= MAX_OUTPUTS;
    for (int i = 0; i < count && well_formed; i++)
        well_formed = (PyObject *)Py_TYPE(PyTuple_GET_ITEM(items, i)) == core.hooks.tensor_type;
    if (!well_formed || (modes = foreign_mode_active(&core.hooks)) != 0) {
        answer = PyErr_Occurred() ? NULL : Py_BuildValue("(sO)", well_formed ? "modes" : "bad_output", result);
        goto done;
    }
    for (int i = 0; i < count; i++) {
        if (describe_output(&core.hooks, core.on_gpu, PyTuple_GET_ITEM(items, i), &views[i])) {
            /* not a dense tensor on this device (sparse, meta, elsewhere): the worker names why */
            PyErr_Clear();
            answer = Py_BuildValue("(sO)", "bad_output", result);
            goto done;
        }
        total += views[i].nbytes;
    }
    if (total > MAX_OUTPUT_BYTES) { PyErr_SetString(PyExc_ValueError, "outputs larger than 2 GiB"); goto done; }
    if (copy_outputs(views, count, total)) goto done;
    if (core.on_gpu && cuda_failed(cu.EventElapsedTime(&ms, core.start_event, core.end_event), "cuEventElapsedTime")) goto done;
    double time_us = core.on_gpu ? ms * 1e3 - overhead_us : host_us;
    uint8_t digest[32], mac[32], message[5 + 8 + 8 + 8 + 8 + 1 + 1 + 32];
    if (digest_outputs(views, count, host_copy[0], core.on_gpu ? host_copy[1] : NULL, digest, &unfinished)) goto done;
    memcpy(message, "call:", 5);
    memcpy(message + 5, &index, 8); memcpy(message + 13, &seed, 8); memcpy(message + 21, &time_us, 8);
    memcpy(message + 29, &overhead_us, 8); message[37] = (uint8_t)unfinished; message[38] = (uint8_t)exposed;
    memcpy(message + 39, digest, 32);
    if (mac_with_key(message, sizeof message, mac) || !(outputs = PyList_New(count))) goto done;
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        PyObject *entry = Py_BuildValue("(OOOLy#)", views[i].dtype, views[i].shape, views[i].stride, views[i].offset,
                                        (const char *)host_copy[0] + at, (Py_ssize_t)views[i].nbytes);
        if (!entry) goto done;
        PyList_SET_ITEM(outputs, i, entry);
        at += views[i].nbytes;
    }
    answer = Py_BuildValue("(sddOOOOy#O)", "ok", time_us, host_us, unfinished ? Py_True : Py_False,
                           exposed ? Py_True : Py_False, structure, outputs, (const char *)mac, (Py_ssize_t)32, result);
done:
    for (int i = 0; i < count && i < MAX_OUTPUTS; i++) {
        Py_XDECREF(views[i].dtype); Py_XDECREF(views[i].shape); Py_XDECREF(views[i].stride);
    }
    Py_XDECREF(outputs); Py_DECREF(items); Py_DECREF(structure);
    return answer;
}

/* time_call(data, index, seed, sleep_us): flush, sleep, start event, custom_kernel(data), end
 * event, output copies, MAC. Indexes only grow, and calls do not nest (no MAC for a replay). */
static PyObject *sealed_time_call(PyObject *self, PyObject *args) {
    PyObject *data, *result, *answer;
    long long index;
    unsigned long long seed;
    double sleep_us, host_us;
    if (!PyArg_ParseTuple(args, "OLKd", &data, &index, &seed, &sleep_us)) return NULL;
    if (!kernel) { PyErr_SetString(PyExc_RuntimeError, "time_call: no custom_kernel is bound"); return NULL; }
    if (busy) { PyErr_SetString(PyExc_RuntimeError, "time_call: a timed call is already running"); return NULL; }
    if (index <= last_index) { PyErr_Format(PyExc_RuntimeError, "time_call: call %lld was already timed", index); return NULL; }
    last_index = index;
    busy = 1;
    /* From here to the MAC no collection runs: one would call the submission's gc.callbacks and
     * finalizers while the outputs are read (s11_gc_callback_in_window.py). */
    int collector_was_on = PyGC_Disable();
    if (core.on_gpu && start_timing(sleep_us)) { busy = 0; if (collector_was_on) PyGC_Enable(); return NULL; }
    double host_start = now_us();
    result = PyObject_CallOneArg(kernel, data);
    host_us = now_us() - host_start;
    PyGC_Disable();  /* custom_kernel may have turned it back on */
    /* Exposed: the GPU reached the start event before the host had queued the whole call, so the
     * queued sleep ran out and host time may lie between the events. The parent discards such a
     * time and asks again with a longer sleep. */
    int exposed = core.on_gpu && cu.EventQuery(core.start_event) == 0;
    int recorded = !core.on_gpu || !cuda_failed(cu.EventRecord(core.end_event, core.stream), "end event");
    answer = result && recorded ? seal_call(index, seed, result, host_us, exposed) : NULL;
    busy = 0;
    if (collector_was_on) PyGC_Enable();
    Py_XDECREF(result);
    return answer;
}

/* recheck(nonce): measure the event overhead again; MAC over (nonce, overhead in use, new, spread).
 * Called by the worker when the parent asks, after each timed case (the end-of-run check). */
static PyObject *sealed_recheck(PyObject *self, PyObject *args) {
    const char *nonce;
    Py_ssize_t nonce_size;
    double fresh = overhead_us, spread = 0.0;
    uint8_t message[8 + 16 + 24], mac[32];
    if (!PyArg_ParseTuple(args, "y#", &nonce, &nonce_size)) return NULL;
    if (!core.keyed || busy || nonce_size != 16) { PyErr_SetString(PyExc_RuntimeError, "recheck: not now"); return NULL; }
    if (core.on_gpu && (fresh = measure_overhead(&spread)) < -0.5) return cuda_failed(1, "overhead recheck") ? NULL : NULL;
    memcpy(message, "recheck:", 8); memcpy(message + 8, nonce, 16);
    memcpy(message + 24, &overhead_us, 8); memcpy(message + 32, &fresh, 8); memcpy(message + 40, &spread, 8);
    if (mac_with_key(message, sizeof message, mac)) return NULL;
    double in_use = overhead_us;
    /* A consistent fresh measurement that moved replaces the old one; the parent applies the same rule. */
    if (overhead_consistent(fresh, spread) && (fresh - in_use > OVERHEAD_SPREAD_MAX_US || in_use - fresh > OVERHEAD_SPREAD_MAX_US))
        overhead_us = fresh;
    return Py_BuildValue("(dddy#)", in_use, fresh, spread, (const char *)mac, (Py_ssize_t)32);
}

static PyObject *sealed_hmac(PyObject *self, PyObject *args) {
    const char *test_key, *message;
    Py_ssize_t key_size, size;
    uint8_t mac[32];
    if (!PyArg_ParseTuple(args, "y#y#", &test_key, &key_size, &message, &size)) return NULL;
    hmac_sha256((const uint8_t *)test_key, (size_t)key_size, message, (size_t)size, mac);
    return PyBytes_FromStringAndSize((const char *)mac, 32);
}

static PyObject *sealed_sha256_backend(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(sha256_backend());
}

static PyMethodDef methods[] = {
    {"init", sealed_init, METH_VARARGS, "Read the run key from a pipe fd, then set up the CUDA timer."},
    {"bind", sealed_bind, METH_VARARGS, "Import the submission through a loader and bind its custom_kernel."},
    {"time_call", sealed_time_call, METH_VARARGS, "Time one call of the bound kernel; returns a sealed result."},
    {"recheck", sealed_recheck, METH_VARARGS, "Measure the event overhead again; MAC over (nonce, both)."},
    {"hmac_sha256", sealed_hmac, METH_VARARGS, "HMAC-SHA256 of a message under a given key (self-test)."},
    {"sha256_backend", sealed_sha256_backend, METH_NOARGS, "'sha-ni' or 'portable': which SHA-256 digests and signs results."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_sealed", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sealed(void) { return PyModule_Create(&module_def); }
