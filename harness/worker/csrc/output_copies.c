/* The copies of a timed call's outputs (harness._sealed). On a GPU the first is queued right behind the
 * end event, into the parent's device snapshot for outputs that leave the pipe (mapped by map_snapshot)
 * or else into the core's own device memory, and hashed there (the leaf kernel of
 * harness/contract/leaf_hash.py, loaded at init); the second is made once every stream is idle and
 * hashed the same way, so that work of the submission still running after the end event shows as the
 * two copies' leaves differing (`unfinished`). The leaves come back to the host, and the first copy's
 * bytes unless they lie in the snapshot: the digest the MAC covers is made of those leaves, and the
 * parent hashes what it received on its own GPU (harness/judge/worker_link/seal.py). On the CPU one
 * memcpy, hashed by digest_tree.c. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call_phases.h"
#include "core_state.h"
#include "digest_tree.h"
#include "output_copies.h"

#define DEVICE_ALIGN 256ull
#define LEAF_THREADS 128u
#define LEAF_BYTES 32ull
#define TABLE_WORDS 3  /* a launch's table entry: data, bytes, first leaf (harness/contract/leaf_hash.py) */

static int window_fd = -1;  /* signal_window's: advisory, so kept in ordinary memory */

/* One ``window_closed`` message for call ``index``: a 4-byte length, then its JSON header
 * (harness/contract/protocol.py), into ``frame``; its size in all, 0 where it does not fit. */
static size_t window_frame(long long index, char *frame, size_t size) {
    int length = snprintf(frame + 4, size - 4, "{\"op\": \"window_closed\", \"index\": %lld}", index);
    if (length <= 0 || (size_t)length >= size - 4) return 0;
    uint32_t header = (uint32_t)length;
    memcpy(frame, &header, 4);
    return (size_t)length + 4;
}

/* That message on the result channel. Best effort: a failed write is the parent's to notice (no reply). */
static void window_closed(long long index) {
    char frame[96];
    size_t total = window_fd < 0 ? 0 : window_frame(index, frame, sizeof frame), sent = 0;
    while (sent < total) {
        ssize_t wrote = write(window_fd, frame + sent, total - sent);
        if (wrote <= 0) return;
        sent += (size_t)wrote;
    }
}

PyObject *window_message(PyObject *self, PyObject *args) {
    long long index;
    char frame[96];
    if (!PyArg_ParseTuple(args, "L", &index)) return NULL;
    return PyBytes_FromStringAndSize(frame, (Py_ssize_t)window_frame(index, frame, sizeof frame));
}

PyObject *signal_window(PyObject *self, PyObject *args) {
    if (!PyArg_ParseTuple(args, "i", &window_fd)) return NULL;
    Py_RETURN_NONE;
}

static unsigned long long aligned(unsigned long long bytes) { return (bytes + DEVICE_ALIGN - 1) & ~(DEVICE_ALIGN - 1); }

static int reserve_host(size_t bytes) {
    if (bytes <= ST->host_capacity) return 0;
    if (core.on_gpu) {
        if (ST->host_copy) cu.MemFreeHost(ST->host_copy);
        ST->host_copy = NULL;
        CUI(cu.MemAllocHost((void **)&ST->host_copy, bytes), "pinned host allocation");
    } else {
        free(ST->host_copy);
        if (!(ST->host_copy = malloc(bytes))) { PyErr_NoMemory(); return -1; }
    }
    ST->host_capacity = bytes;
    return 0;
}

/* The two passes' leaf tables; device copy ``first`` to 1 of ``bytes`` (each output at a DEVICE_ALIGN
 * offset; copy 0 is not needed when the first copy goes into the parent's device snapshot), and both
 * copies' leaves on the device and in pinned host memory. */
static int reserve_device(int first, size_t bytes, size_t leaves) {
    if (!ST->device_table) {
        CUI(cu.MemAlloc(&ST->device_table, 2 * MAX_OUTPUTS * TABLE_WORDS * 8), "device leaf tables");
        CUI(cu.MemAllocHost((void **)&ST->host_table, 2 * MAX_OUTPUTS * TABLE_WORDS * 8), "pinned leaf tables");
    }
    for (int i = first; i < 2; i++) {
        if (bytes <= ST->device_capacity[i]) continue;
        if (ST->device_copy[i]) cu.MemFree(ST->device_copy[i]);
        ST->device_copy[i] = 0;
        ST->device_capacity[i] = 0;
        CUI(cu.MemAlloc(&ST->device_copy[i], bytes), "device copy of the outputs");
        ST->device_capacity[i] = bytes;
    }
    if (2 * leaves * LEAF_BYTES > ST->leaves_capacity) {
        size_t size = 2 * leaves * LEAF_BYTES;
        if (ST->device_leaves) cu.MemFree(ST->device_leaves);
        if (ST->host_leaves) cu.MemFreeHost(ST->host_leaves);
        ST->device_leaves = 0;
        ST->host_leaves = NULL;
        CUI(cu.MemAlloc(&ST->device_leaves, size), "device leaves");
        CUI(cu.MemAllocHost((void **)&ST->host_leaves, size), "pinned leaves");
        ST->leaves_capacity = size;
    }
    return 0;
}

/* Copy every output into ``copy`` (device memory, output i at ``at[i]``) and queue their leaves into
 * ``leaves``, on the core's stream: the copies, the launch's table (pass ``pass``'s own slot, so that the
 * second pass does not overwrite a table the first's copy may still be reading), and one launch for
 * every output. */
static int copy_and_hash(const output_view *views, int count, const unsigned long long *at, int pass,
                         CUdeviceptr copy, CUdeviceptr leaves) {
    unsigned long long first = 0, *table = ST->host_table + pass * MAX_OUTPUTS * TABLE_WORDS;
    for (int i = 0; i < count; i++) {
        if (views[i].nbytes)
            CUI(cu.MemcpyDtoDAsync(copy + at[i], views[i].pointer, views[i].nbytes, ST->stream), "output copy");
        table[TABLE_WORDS * i] = copy + at[i];
        table[TABLE_WORDS * i + 1] = views[i].nbytes;
        table[TABLE_WORDS * i + 2] = first;
        first += digest_chunk_count(views[i].nbytes);
    }
    if (!first) return 0;
    CUdeviceptr device_table = ST->device_table + pass * MAX_OUTPUTS * TABLE_WORDS * 8;
    CUI(cu.MemcpyHtoDAsync(device_table, table, (size_t)count * TABLE_WORDS * 8, ST->stream), "leaf table");
    unsigned long long entries = (unsigned long long)count;
    void *params[] = {&device_table, &entries, &leaves};
    unsigned blocks = (unsigned)((first + LEAF_THREADS - 1) / LEAF_THREADS);
    CUI(cu.LaunchKernel(core.leaf_kernel, blocks, 1, 1, LEAF_THREADS, 1, 1, 0, ST->stream, params, NULL), "output leaves");
    return 0;
}

static int copy_on_gpu(const output_view *views, int count, size_t total, output_copy *copy) {
    size_t device_bytes = 0, leaves = 0;
    for (int i = 0; i < count; i++) {  /* each output's place in a device copy: at a DEVICE_ALIGN offset */
        copy->at[i] = device_bytes;
        device_bytes += aligned(views[i].nbytes);
        leaves += digest_chunk_count(views[i].nbytes);
    }
    copy->in_snapshot = ST->snapshot && total >= ST->snapshot_min_bytes && device_bytes <= ST->snapshot_bytes;
    if (!copy->in_snapshot) {  /* the first copy's bytes come back to the host */
        if (reserve_host(total ? total : 1)) return -1;
        copy->bytes = ST->host_copy;
    }
    if (reserve_device(copy->in_snapshot, device_bytes ? device_bytes : DEVICE_ALIGN, leaves ? leaves : 1)) return -1;
    CUdeviceptr first = copy->in_snapshot ? ST->snapshot : ST->device_copy[0];
    if (copy_and_hash(views, count, copy->at, 0, first, ST->device_leaves)) return -1;
    CUI(cu.StreamSynchronize(ST->stream), "synchronize after the output copy");
    window_closed(ST->last_index);  /* the window, its end stamp and the first copy are done on the GPU */
    phase_mark(PHASE_WAITED);
    CUI(cu.CtxSynchronize(), "synchronize every stream");
    phase_mark(PHASE_IDLE);
    if (copy_and_hash(views, count, copy->at, 1, ST->device_copy[1], ST->device_leaves + leaves * LEAF_BYTES))
        return -1;
    CUI(cu.MemcpyDtoHAsync(ST->host_leaves, ST->device_leaves, 2 * leaves * LEAF_BYTES, ST->stream), "leaves copy");
    size_t packed = 0;
    for (int i = 0; !copy->in_snapshot && i < count; i++) {
        if (views[i].nbytes)
            CUI(cu.MemcpyDtoHAsync(ST->host_copy + packed, first + copy->at[i], views[i].nbytes, ST->stream),
                "output copy to the host");
        packed += views[i].nbytes;
    }
    CUI(cu.StreamSynchronize(ST->stream), "synchronize after the second copy");
    copy->leaves = ST->host_leaves;
    copy->differs = memcmp(ST->host_leaves, ST->host_leaves + leaves * LEAF_BYTES, leaves * LEAF_BYTES) != 0;
    return 0;
}

PyObject *map_snapshot(PyObject *self, PyObject *args) {
    int fd;
    unsigned long long bytes, min_bytes;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr base = 0;
    CUdevice device;
    if (!PyArg_ParseTuple(args, "iKK", &fd, &bytes, &min_bytes)) return NULL;
    if (!core.on_gpu || hidden_open()) {
        close(fd);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "map_snapshot: the core has no GPU");
        return NULL;
    }
    int failed = ST->snapshot != 0;
    if (failed) PyErr_SetString(PyExc_RuntimeError, "map_snapshot: the snapshot is already mapped");
    failed = failed || cuda_failed(cu.CtxGetDevice(&device), "cuCtxGetDevice") ||
             cuda_failed(cu.MemImportFromShareableHandle(&handle, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                         "importing the parent's device snapshot");
    close(fd);
    if (!failed) {
        CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, device}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        failed = cuda_failed(cu.MemAddressReserve(&base, bytes, 0, 0, 0), "reserving the snapshot's addresses") ||
                 cuda_failed(cu.MemMap(base, bytes, 0, handle, 0), "mapping the snapshot") ||
                 cuda_failed(cu.MemSetAccess(base, bytes, &access, 1), "the snapshot's access");
        cu.MemRelease(handle);  /* the mapping keeps the memory; the parent holds its own handle */
    }
    if (!failed) {
        ST->snapshot = base;
        ST->snapshot_bytes = bytes;
        ST->snapshot_min_bytes = min_bytes;
    }
    hidden_close();
    if (failed) return NULL;
    Py_RETURN_NONE;
}

int copy_outputs(const output_view *views, int count, size_t total, output_copy *copy) {
    memset(copy, 0, sizeof *copy);
    if (core.on_gpu) return copy_on_gpu(views, count, total, copy);
    if (reserve_host(total ? total : 1)) return -1;
    copy->bytes = ST->host_copy;
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        if (views[i].nbytes) memcpy(ST->host_copy + at, (const void *)(uintptr_t)views[i].pointer, views[i].nbytes);
        at += views[i].nbytes;
    }
    return 0;
}
