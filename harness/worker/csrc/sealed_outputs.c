/* Reading the submission's outputs for harness._sealed: which objects are outputs, where their
 * storage is, and the digest the MAC covers. Only torch entry points captured at init are called
 * (torch_hooks, held in C), and only on exact torch.Tensor objects: between custom_kernel's return
 * and the MAC no Python code of the submission's can run (docs/security.md, "The timed window"). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "digest_tree.h"
#include "sealed_outputs.h"
#include "sha256.h"

int capture_hooks(PyObject *dict, torch_hooks *hooks) {
    struct { PyObject **slot; const char *name; } entries[] = {
        {&hooks->tensor_type, "tensor_type"}, {&hooks->dtype, "dtype"}, {&hooks->is_cuda, "is_cuda"},
        {&hooks->untyped_storage, "untyped_storage"}, {&hooks->storage_data_ptr, "storage_data_ptr"},
        {&hooks->storage_nbytes, "storage_nbytes"}, {&hooks->storage_offset, "storage_offset"},
        {&hooks->size, "size"}, {&hooks->stride, "stride"}, {&hooks->function_stack_len, "function_stack_len"},
        {&hooks->dispatch_stack_len, "dispatch_stack_len"}, {&hooks->function_stack_at, "function_stack_at"},
        {&hooks->device_context, "device_context"},
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        PyObject *value = PyDict_GetItemString(dict, entries[i].name);
        if (!value) { PyErr_Format(PyExc_RuntimeError, "sealed timer hook %s missing", entries[i].name); return -1; }
        Py_INCREF(value);
        *entries[i].slot = value;
    }
    if (!PyType_Check(hooks->tensor_type) || !PyType_Check(hooks->device_context) ||
        !Py_TYPE(hooks->dtype)->tp_descr_get) {
        PyErr_SetString(PyExc_RuntimeError, "sealed timer hooks: tensor_type and device_context must be types, "
                        "dtype a descriptor");
        return -1;
    }
    /* What the default-device mode's __torch_function__ is, looked up as foreign_mode_active does. */
    hooks->torch_function_name = PyUnicode_InternFromString("__torch_function__");
    if (!hooks->torch_function_name) return -1;
    hooks->device_context_tf = _PyType_Lookup((PyTypeObject *)hooks->device_context, hooks->torch_function_name);
    if (!hooks->device_context_tf) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "DeviceContext has no __torch_function__");
        return -1;
    }
    Py_INCREF(hooks->device_context_tf);
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

/* 1 when a torch function or dispatch mode other than an unmodified default-device context is
 * active: such a mode would run the submission's code while this file reads the outputs. */
int foreign_mode_active(const torch_hooks *hooks) {
    long long functions = hook_long(hooks->function_stack_len, NULL), dispatch = hook_long(hooks->dispatch_stack_len, NULL);
    if (functions < 0 || dispatch < 0) return -1;
    if (dispatch) return 1;
    int foreign = 0;
    for (long long i = 0; i < functions && !foreign; i++) {
        PyObject *index = PyLong_FromLongLong(i), *mode = index ? hook_call(hooks->function_stack_at, index) : NULL;
        Py_XDECREF(index);
        if (!mode) return -1;
        /* The class's own attribute, read from its dicts (_PyType_Lookup runs no Python code, unlike
         * getattr, which a descriptor or metaclass could turn into a call of the submission's). */
        foreign = (PyObject *)Py_TYPE(mode) != hooks->device_context ||
                  _PyType_Lookup((PyTypeObject *)hooks->device_context, hooks->torch_function_name) !=
                      hooks->device_context_tf;
        Py_DECREF(mode);
    }
    return foreign;
}

int describe_output(const torch_hooks *hooks, int on_gpu, PyObject *tensor, output_view *view) {
    PyObject *storage = NULL, *size = NULL;
    long long pointer, nbytes, is_cuda;
    view->dtype = Py_TYPE(hooks->dtype)->tp_descr_get(hooks->dtype, tensor, (PyObject *)Py_TYPE(tensor));
    if (!view->dtype) return -1;
    Py_SETREF(view->dtype, PyObject_Str(view->dtype));
    if (!view->dtype || !(storage = hook_call(hooks->untyped_storage, tensor))) return -1;
    pointer = hook_long(hooks->storage_data_ptr, storage);
    nbytes = hook_long(hooks->storage_nbytes, storage);
    Py_DECREF(storage);
    is_cuda = hook_long(hooks->is_cuda, tensor);
    view->offset = hook_long(hooks->storage_offset, tensor);
    if (PyErr_Occurred() || !(size = hook_call(hooks->size, tensor))) return -1;
    view->shape = PySequence_Tuple(size);
    Py_DECREF(size);
    if (!view->shape || !(view->stride = hook_call(hooks->stride, tensor))) return -1;
    if (is_cuda != on_gpu) {
        PyErr_SetString(PyExc_ValueError, on_gpu ? "an output tensor is not on the GPU" : "an output tensor is not on the CPU");
        return -1;
    }
    if (!pointer && nbytes) {  /* a meta tensor: no memory to copy from */
        PyErr_SetString(PyExc_ValueError, "an output tensor has no memory (a meta tensor)");
        return -1;
    }
    view->pointer = (unsigned long long)pointer;
    view->nbytes = (unsigned long long)nbytes;
    return 0;
}

int digest_outputs(const output_view *views, int count, const uint8_t *bytes, const uint8_t *again, uint8_t out[32],
                   int *differs) {
    size_t chunk_count = 0, at = 0, next = 0;
    for (int i = 0; i < count; i++) chunk_count += digest_chunk_count(views[i].nbytes);
    digest_chunk *chunks = calloc(chunk_count ? chunk_count : 1, sizeof *chunks);
    if (!chunks) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < count; i++) {
        for (size_t offset = 0; offset < views[i].nbytes; offset += DIGEST_CHUNK_BYTES, next++) {
            chunks[next].bytes = bytes + at + offset;
            chunks[next].again = again ? again + at + offset : NULL;
            chunks[next].size = views[i].nbytes - offset < DIGEST_CHUNK_BYTES ? views[i].nbytes - offset : DIGEST_CHUNK_BYTES;
        }
        at += views[i].nbytes;
    }
    *differs = digest_chunks(chunks, chunk_count);
    sha256_ctx ctx;
    sha256_init(&ctx);
    next = 0;
    for (int i = 0; i < count; i++) {
        const char *dtype = PyUnicode_AsUTF8(views[i].dtype);
        long long header[2] = {views[i].offset, (long long)views[i].nbytes};
        sha256_update(&ctx, dtype, strlen(dtype) + 1);
        for (int axis = 0; axis < 2; axis++) {
            PyObject *dims = axis ? views[i].stride : views[i].shape;
            long long ndim = PyTuple_GET_SIZE(dims);
            sha256_update(&ctx, &ndim, 8);
            for (long long d = 0; d < ndim; d++) {
                long long value = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, d));
                sha256_update(&ctx, &value, 8);
            }
        }
        sha256_update(&ctx, header, sizeof header);
        for (size_t leaves = digest_chunk_count(views[i].nbytes); leaves; leaves--, next++)
            sha256_update(&ctx, chunks[next].leaf, 32);
    }
    sha256_final(&ctx, out);
    free(chunks);
    return 0;
}
