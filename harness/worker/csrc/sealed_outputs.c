/* Reading the submission's outputs for harness._sealed: which objects are outputs, where their
 * storage is, and the digest the MAC covers. Only torch entry points captured at init are called
 * (torch_hooks, held in C), only on exact torch.Tensor objects with no torch mode active, and only
 * before the end event: after it the core works on the C copy (output_view) until the MAC
 * (docs/security.md, "The timed window"). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "digest_tree.h"
#include "sealed_outputs.h"
#include "sha256.h"

int capture_hooks(PyObject *dict, torch_hooks *hooks) {
    struct { PyObject **slot; const char *name; } entries[] = {
        {&hooks->tensor_type, "tensor_type"}, {&hooks->dtype, "dtype"}, {&hooks->is_cuda, "is_cuda"},
        {&hooks->untyped_storage, "untyped_storage"}, {&hooks->storage_data_ptr, "storage_data_ptr"},
        {&hooks->storage_nbytes, "storage_nbytes"}, {&hooks->storage_offset, "storage_offset"},
        {&hooks->size, "size"}, {&hooks->stride, "stride"},
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        PyObject *value = PyDict_GetItemString(dict, entries[i].name);
        if (!value) { PyErr_Format(PyExc_RuntimeError, "sealed timer hook %s missing", entries[i].name); return -1; }
        Py_INCREF(value);
        *entries[i].slot = value;
    }
    if (!PyType_Check(hooks->tensor_type) || !Py_TYPE(hooks->dtype)->tp_descr_get) {
        PyErr_SetString(PyExc_RuntimeError, "sealed timer hooks: tensor_type must be a type, dtype a descriptor");
        return -1;
    }
    return 0;
}

static PyObject *hook_call(PyObject *function, PyObject *arg) {
    return arg ? PyObject_CallOneArg(function, arg) : PyObject_CallNoArgs(function);
}

static long long hook_long(PyObject *function, PyObject *arg) {
    PyObject *value = hook_call(function, arg);
    if (!value) return -1;
    long long result = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return result;
}

/* A tuple of ints (torch.Size or a stride tuple) into C; -1 with an exception. */
static int dims_to_c(PyObject *dims, long long *out, int *ndim) {
    PyObject *tuple = dims ? PySequence_Tuple(dims) : NULL;
    if (!tuple) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    if (n > MAX_DIMS) {
        Py_DECREF(tuple);
        PyErr_Format(PyExc_ValueError, "an output tensor has %zd dimensions (at most %d)", n, MAX_DIMS);
        return -1;
    }
    for (Py_ssize_t d = 0; d < n; d++) out[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, d));
    Py_DECREF(tuple);
    if (ndim) *ndim = (int)n;
    return PyErr_Occurred() ? -1 : 0;
}

int describe_output(const torch_hooks *hooks, int on_gpu, PyObject *tensor, output_view *view) {
    PyObject *storage = NULL, *dims = NULL, *dtype;
    long long pointer, nbytes, is_cuda;
    int stride_dims = 0;
    memset(view, 0, sizeof *view);
    dtype = Py_TYPE(hooks->dtype)->tp_descr_get(hooks->dtype, tensor, (PyObject *)Py_TYPE(tensor));
    if (!dtype) return -1;
    Py_SETREF(dtype, PyObject_Str(dtype));
    const char *name = dtype ? PyUnicode_AsUTF8(dtype) : NULL;
    if (!name || strlen(name) >= sizeof view->dtype) {
        if (name) PyErr_SetString(PyExc_ValueError, "an output tensor's dtype name is too long");
        Py_XDECREF(dtype);
        return -1;
    }
    strcpy(view->dtype, name);
    Py_DECREF(dtype);
    if (!(storage = hook_call(hooks->untyped_storage, tensor))) return -1;
    pointer = hook_long(hooks->storage_data_ptr, storage);
    nbytes = hook_long(hooks->storage_nbytes, storage);
    Py_DECREF(storage);
    is_cuda = hook_long(hooks->is_cuda, tensor);
    view->offset = hook_long(hooks->storage_offset, tensor);
    if (PyErr_Occurred()) return -1;
    dims = hook_call(hooks->size, tensor);
    int failed = dims_to_c(dims, view->shape, &view->ndim);
    Py_XDECREF(dims);
    if (failed) return -1;
    dims = hook_call(hooks->stride, tensor);
    failed = dims_to_c(dims, view->stride, &stride_dims);
    Py_XDECREF(dims);
    if (failed) return -1;
    if (stride_dims != view->ndim) {
        PyErr_SetString(PyExc_ValueError, "an output tensor's strides do not match its shape");
        return -1;
    }
    if (is_cuda != on_gpu) {
        PyErr_SetString(PyExc_ValueError, on_gpu ? "an output tensor is not on the GPU" : "an output tensor is not on the CPU");
        return -1;
    }
    if (!pointer && nbytes) { /* a meta tensor: no memory to copy from */
        PyErr_SetString(PyExc_ValueError, "an output tensor has no memory (a meta tensor)");
        return -1;
    }
    view->pointer = (unsigned long long)pointer;
    view->nbytes = (unsigned long long)nbytes;
    return 0;
}

int digest_outputs(const output_view *views, int count, const uint8_t *bytes, const uint8_t *leaves, uint8_t out[32]) {
    size_t chunk_count = 0, at = 0, next = 0;
    for (int i = 0; i < count; i++) chunk_count += digest_chunk_count(views[i].nbytes);
    digest_chunk *chunks = leaves ? NULL : calloc(chunk_count ? chunk_count : 1, sizeof *chunks);
    if (!leaves && !chunks) { PyErr_NoMemory(); return -1; }
    for (int i = 0; chunks && i < count; i++) {
        for (size_t offset = 0; offset < views[i].nbytes; offset += DIGEST_CHUNK_BYTES, next++) {
            chunks[next].bytes = bytes + at + offset;
            chunks[next].size = views[i].nbytes - offset < DIGEST_CHUNK_BYTES ? views[i].nbytes - offset : DIGEST_CHUNK_BYTES;
        }
        at += views[i].nbytes;
    }
    if (chunks) digest_chunks(chunks, chunk_count);
    sha256_ctx ctx;
    sha256_init(&ctx);
    next = 0;
    for (int i = 0; i < count; i++) {
        long long header[2] = {views[i].offset, (long long)views[i].nbytes}, ndim = views[i].ndim;
        sha256_update(&ctx, views[i].dtype, strlen(views[i].dtype) + 1);
        for (int axis = 0; axis < 2; axis++) {
            sha256_update(&ctx, &ndim, 8);
            sha256_update(&ctx, axis ? views[i].stride : views[i].shape, 8 * (size_t)ndim);
        }
        sha256_update(&ctx, header, sizeof header);
        for (size_t pieces = digest_chunk_count(views[i].nbytes); pieces; pieces--, next++)
            sha256_update(&ctx, leaves ? leaves + 32 * next : chunks[next].leaf, 32);
    }
    sha256_final(&ctx, out);
    free(chunks);
    return 0;
}

/* The parent's output file (a sealed memfd of MAX_OUTPUT_BYTES it created, passed at spawn) and this
 * process's mapping of it. Nothing here is trusted: the parent reads the file through its own
 * descriptor into its own memory and checks what it read against the digest the MAC covers. */
static struct {
    int fd;
    uint8_t *base;
    size_t mapped;
    unsigned long long min_bytes;
} outputs_map = {-1, NULL, 0, 0};

#define MAP_STEP_BYTES ((size_t)64 << 20)

/* Map at least ``bytes`` of the file (in MAP_STEP_BYTES steps, at most its size); -1 with an exception. */
static int map_at_least(size_t bytes) {
    struct stat file;
    if (fstat(outputs_map.fd, &file) != 0) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    if ((unsigned long long)file.st_size < bytes) {
        PyErr_Format(PyExc_RuntimeError, "the parent's output file holds %lld bytes, the outputs %zu",
                     (long long)file.st_size, bytes);
        return -1;
    }
    size_t size = (bytes + MAP_STEP_BYTES - 1) / MAP_STEP_BYTES * MAP_STEP_BYTES;
    size = size > (size_t)file.st_size ? (size_t)file.st_size : size;
    void *base = size ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, outputs_map.fd, 0) : NULL;
    if (base == MAP_FAILED) { PyErr_SetFromErrno(PyExc_OSError); return -1; }
    if (outputs_map.base) munmap(outputs_map.base, outputs_map.mapped);
    outputs_map.base = base;
    outputs_map.mapped = size;
    return 0;
}

PyObject *map_outputs(PyObject *self, PyObject *args) {
    int fd;
    unsigned long long min_bytes;
    if (!PyArg_ParseTuple(args, "iK", &fd, &min_bytes)) return NULL;
    if (outputs_map.fd >= 0) { PyErr_SetString(PyExc_RuntimeError, "map_outputs: the output file is already set"); return NULL; }
    outputs_map.fd = fd;
    outputs_map.min_bytes = min_bytes;
    if (map_at_least(1)) { /* made before the syscall filter exists; a larger output maps again */
        outputs_map.fd = -1;
        return NULL;
    }
    Py_RETURN_NONE;
}

int place_outputs(const output_view *views, int count, const uint8_t *bytes, size_t total, long long *at) {
    if (outputs_map.fd < 0 || total < outputs_map.min_bytes) return 0;
    if (total > outputs_map.mapped && map_at_least(total)) return -1;
    if (copy_chunked(outputs_map.base, bytes, total)) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < count; i++) at[i] = i ? at[i - 1] + (long long)views[i - 1].nbytes : 0;
    return 1;
}
