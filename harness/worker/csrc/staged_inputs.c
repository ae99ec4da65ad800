/* Staged inputs for harness._sealed, the CPU's route (a GPU draws its inputs: drawn_inputs.c): the parent
 * draws each ranked call's inputs itself, encrypts every operand's storage bytes with ChaCha20 under the
 * run's staging key and a nonce naming the call index, and writes them into a sealed file it handed over
 * at spawn. The worker's Python builds the call's tensors from a draw under a public seed; the core,
 * inside time_call after its hook and mode probes, decrypts the real bytes into them. No Python of the
 * submission's runs between the decryption and custom_kernel (the GIL is held, the collector off), and
 * each index decrypts once: a call index the core has timed is refused, another index gives noise. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "chacha20.h"
#include "staged_inputs.h"

static struct {
    const uint8_t *base;   /* the file, mapped read-only */
    size_t size;
    uint8_t *plain;         /* the last call's plaintext, to compare the operands with after the call */
    size_t capacity;
} staging = {NULL, 0, NULL, 0};

PyObject *map_inputs(PyObject *self, PyObject *args) {
    int fd;
    struct stat file;
    if (!PyArg_ParseTuple(args, "i", &fd)) return NULL;
    if (staging.base) { PyErr_SetString(PyExc_RuntimeError, "map_inputs: the staging file is already set"); return NULL; }
    if (fstat(fd, &file) != 0 || file.st_size <= 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "map_inputs: the staging file is empty");
        return NULL;
    }
    void *base = mmap(NULL, (size_t)file.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return PyErr_SetFromErrno(PyExc_OSError);
    staging.base = base;
    staging.size = (size_t)file.st_size;
    Py_RETURN_NONE;
}

int describe_operands(const torch_hooks *hooks, PyObject *operands, unsigned long long kept,
                      staged_operand *out, int *count) {
    PyObject *items = PySequence_Tuple(operands);
    if (!items) return -1;
    *count = 0;
    int failed = PyTuple_GET_SIZE(items) > MAX_STAGED;
    if (failed) PyErr_Format(PyExc_ValueError, "more than %d staged operands", MAX_STAGED);
    for (Py_ssize_t i = 0; !failed && i < PyTuple_GET_SIZE(items); i++) {
        PyObject *tensor = PyTuple_GET_ITEM(items, i), *flag = NULL, *value = NULL;
        staged_operand *op = &out[*count];
        if ((PyObject *)Py_TYPE(tensor) != hooks->tensor_type) {
            PyErr_SetString(PyExc_TypeError, "a staged operand is not a torch.Tensor");
            failed = 1;
            break;
        }
        op->kept = (int)((kept >> i) & 1);
        op->storage = PyObject_CallOneArg(hooks->untyped_storage, tensor);
        if (!op->storage) { failed = 1; break; }
        (*count)++;
        flag = PyObject_CallOneArg(hooks->is_cuda, tensor);
        op->pointer = (value = PyObject_CallOneArg(hooks->storage_data_ptr, op->storage)) ? PyLong_AsUnsignedLongLong(value) : 0;
        Py_XDECREF(value);
        op->nbytes = (value = PyObject_CallOneArg(hooks->storage_nbytes, op->storage)) ? PyLong_AsUnsignedLongLong(value) : 0;
        Py_XDECREF(value);
        int is_cuda = flag ? PyObject_IsTrue(flag) : -1;
        Py_XDECREF(flag);
        failed = PyErr_Occurred() != NULL;
        if (!failed && (is_cuda != 0 || (!op->pointer && op->nbytes))) {
            PyErr_SetString(PyExc_ValueError, "a staged operand is not in host memory");
            failed = 1;
        }
    }
    Py_DECREF(items);
    if (failed) release_operands(out, *count);
    return failed ? -1 : 0;
}

void release_operands(staged_operand *operands, int count) {
    for (int i = 0; i < count; i++) Py_CLEAR(operands[i].storage);
}

static size_t aligned(size_t bytes) { return (bytes + STAGE_ALIGN - 1) / STAGE_ALIGN * STAGE_ALIGN; }

/* The buffers hold ``bytes``; -1 with an exception. */
static int reserve(size_t bytes) {
    if (bytes <= staging.capacity) return 0;
    uint8_t *plain = malloc(bytes);
    if (!plain) { PyErr_NoMemory(); return -1; }
    free(staging.plain);
    staging.plain = plain;
    staging.capacity = bytes;
    return 0;
}

int stage_inputs(const uint8_t key[32], long long index, const staged_operand *operands, int count) {
    uint8_t nonce[12] = {'s', 't', 'g', ':'};
    size_t total = 0;
    memcpy(nonce + 4, &index, 8);
    for (int i = 0; i < count; i++) total += aligned(operands[i].nbytes);
    if (!staging.base || total > staging.size || total / STAGE_ALIGN > UINT32_MAX) {
        PyErr_SetString(PyExc_RuntimeError, staging.base ? "the staged inputs do not fit the staging file"
                                                         : "staged inputs asked for, but no staging file is mapped");
        return -1;
    }
    if (reserve(total)) return -1;
    for (size_t at = 0, i = 0; i < (size_t)count; at += aligned(operands[i].nbytes), i++) {
        chacha20_xor(key, nonce, (uint32_t)(at / STAGE_ALIGN), staging.base + at, staging.plain + at, operands[i].nbytes);
        memcpy((void *)(uintptr_t)operands[i].pointer, staging.plain + at, operands[i].nbytes);
    }
    return 0;
}

int inputs_changed(const staged_operand *operands, int count) {
    int changed = 0;
    for (size_t at = 0, i = 0; i < (size_t)count && !changed; at += aligned(operands[i].nbytes), i++)
        changed = operands[i].kept && memcmp((const void *)(uintptr_t)operands[i].pointer, staging.plain + at,
                                             operands[i].nbytes) != 0;
    return changed;
}

PyObject *chacha20_bytes(PyObject *self, PyObject *args) {
    const char *key, *nonce;
    Py_ssize_t key_size, nonce_size;
    unsigned int counter;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y#y#Iy*", &key, &key_size, &nonce, &nonce_size, &counter, &data)) return NULL;
    PyObject *out = key_size == 32 && nonce_size == 12 ? PyBytes_FromStringAndSize(NULL, data.len) : NULL;
    if (key_size != 32 || nonce_size != 12) PyErr_SetString(PyExc_ValueError, "chacha20: a 32-byte key and a 12-byte nonce");
    if (out) chacha20_xor((const uint8_t *)key, (const uint8_t *)nonce, counter, (const uint8_t *)data.buf,
                          (uint8_t *)PyBytes_AS_STRING(out), (size_t)data.len);
    PyBuffer_Release(&data);
    return out;
}
