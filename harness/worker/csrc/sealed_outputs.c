/* Reading the submission's outputs for harness._sealed: which objects are outputs, where their
 * storage is, and the digest the MAC covers. Only torch entry points captured before the import
 * (the hooks dict) are called, and only on exact torch.Tensor objects. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "sealed_outputs.h"
#include "sha256.h"

static PyObject *hook_call(PyObject *hooks, const char *name, PyObject *arg) {
    PyObject *function = PyDict_GetItemString(hooks, name);
    if (!function) { PyErr_Format(PyExc_RuntimeError, "sealed timer hook %s missing", name); return NULL; }
    return arg ? PyObject_CallOneArg(function, arg) : PyObject_CallNoArgs(function);
}

static long long hook_long(PyObject *hooks, const char *name, PyObject *arg) {
    PyObject *value = hook_call(hooks, name, arg);
    if (!value) return -1;
    long long result = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return result;
}

/* 1 when a torch function or dispatch mode other than an unmodified default-device context is
 * active: such a mode would run the submission's code while this file reads the outputs. */
int foreign_mode_active(PyObject *hooks) {
    long long functions = hook_long(hooks, "function_stack_len", NULL), dispatch = hook_long(hooks, "dispatch_stack_len", NULL);
    if (functions < 0 || dispatch < 0) return -1;
    if (dispatch) return 1;
    PyObject *allowed = PyDict_GetItemString(hooks, "device_context"), *allowed_tf = PyDict_GetItemString(hooks, "device_context_tf");
    for (long long i = 0; i < functions; i++) {
        PyObject *index = PyLong_FromLongLong(i), *mode = index ? hook_call(hooks, "function_stack_at", index) : NULL;
        Py_XDECREF(index);
        if (!mode) return -1;
        PyObject *tf = (PyObject *)Py_TYPE(mode) == allowed ? PyObject_GetAttrString(allowed, "__torch_function__") : NULL;
        int foreign = tf != allowed_tf;
        Py_XDECREF(tf);
        Py_DECREF(mode);
        PyErr_Clear();
        if (foreign) return 1;
    }
    return 0;
}

int describe_output(PyObject *hooks, int on_gpu, PyObject *tensor, output_view *view) {
    PyObject *dtype_descriptor = PyDict_GetItemString(hooks, "dtype"), *storage = NULL, *size = NULL;
    long long pointer, nbytes, is_cuda;
    view->dtype = Py_TYPE(dtype_descriptor)->tp_descr_get(dtype_descriptor, tensor, (PyObject *)Py_TYPE(tensor));
    if (!view->dtype) return -1;
    Py_SETREF(view->dtype, PyObject_Str(view->dtype));
    if (!view->dtype || !(storage = hook_call(hooks, "untyped_storage", tensor))) return -1;
    pointer = hook_long(hooks, "storage_data_ptr", storage);
    nbytes = hook_long(hooks, "storage_nbytes", storage);
    Py_DECREF(storage);
    is_cuda = hook_long(hooks, "is_cuda", tensor);
    view->offset = hook_long(hooks, "storage_offset", tensor);
    if (PyErr_Occurred() || !(size = hook_call(hooks, "size", tensor))) return -1;
    view->shape = PySequence_Tuple(size);
    Py_DECREF(size);
    if (!view->shape || !(view->stride = hook_call(hooks, "stride", tensor))) return -1;
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

void digest_outputs(const output_view *views, int count, const uint8_t *bytes, uint8_t out[32]) {
    sha256_ctx ctx;
    size_t at = 0;
    sha256_init(&ctx);
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
        sha256_update(&ctx, bytes + at, views[i].nbytes);
        at += views[i].nbytes;
    }
    sha256_final(&ctx, out);
}

