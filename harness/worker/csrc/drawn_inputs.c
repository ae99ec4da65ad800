/* Drawn inputs for harness._sealed: on a GPU the core draws each ranked call's inputs itself, by
 * replaying a CUDA graph of the problem's own draw (the same kernels as any draw; captured by the worker
 * before the submission's import, instantiated here into an executable graph whose handle only the core
 * holds). The graph reads every kernel table from device memory the core writes before each replay;
 * the hash tables' keys come from the call's seed, which the parent sends masked under the staging key.
 * The worker's Python never holds the seed, and no code of the submission's can run on the GPU between
 * the draw and the start event but on a copy engine (the hold kernel fills every SM first). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blake2b.h"
#include "core_state.h"
#include "drawn_inputs.h"
#include "sha256.h"

#ifndef SYS_mseal
#define SYS_mseal 462 /* as core_pages.c */
#endif

typedef struct {
    uint32_t offset;
    uint32_t name_size;
    char name[DRAW_NAME_BYTES];
} keyed_row;

typedef struct {
    CUdeviceptr pointer;
    uint32_t size, keyed;
    uint8_t template[MAX_TABLE_BYTES];
    keyed_row rows[MAX_KEYED_ROWS];
} draw_table;

/* One draw, on pages of the core's own image (.bss): read-only (and sealed where the kernel has mseal)
 * once add_draw has filled them, before the syscall filter exists, and inside the image the supervisor
 * refuses every mprotect of: no write can swap the executable graph the core launches for another. */
typedef struct {
    CUgraphExec exec;
    uint32_t tables;
    draw_table table[MAX_DRAW_TABLES];
} draw_plan;

#define PLAN_BYTES ((sizeof(draw_plan) + CORE_PAGE_BYTES - 1) / CORE_PAGE_BYTES * CORE_PAGE_BYTES)
static union {
    draw_plan plan;
    unsigned char pages[PLAN_BYTES];
} plans[MAX_DRAWS] __attribute__((aligned(CORE_PAGE_BYTES)));

static uint8_t scratch[MAX_TABLE_BYTES]; /* a table with this call's keys, cleared once copied */

/* The two 32-bit keys of stream ``name`` under ``seed`` (counter_rng.stream_keys): the halves of
 * BLAKE2b-64("seed:name"), little-endian. -1 for a name too long. */
static int stream_keys(unsigned long long seed, const char *name, size_t name_size, uint32_t keys[2]) {
    char message[BLAKE2B_BLOCK + 1];
    uint8_t digest[8];
    int size = snprintf(message, sizeof message, "%llu:%.*s", seed, (int)name_size, name);
    if (size < 0 || size > BLAKE2B_BLOCK || blake2b_short(message, (size_t)size, digest, 8)) return -1;
    for (int half = 0; half < 2; half++)
        keys[half] = (uint32_t)digest[4 * half] | (uint32_t)digest[4 * half + 1] << 8 |
                     (uint32_t)digest[4 * half + 2] << 16 | (uint32_t)digest[4 * half + 3] << 24;
    return 0;
}

/* One (pointer, template, [(offset, name)]) entry into ``table``; -1 with an exception. */
static int read_table(PyObject *entry, draw_table *table) {
    PyObject *rows;
    const char *template;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(entry, "Ky#O", &table->pointer, &template, &size, &rows)) return -1;
    PyObject *items = PySequence_Tuple(rows);
    if (!items) return -1;
    int failed = size <= 0 || size > MAX_TABLE_BYTES || PyTuple_GET_SIZE(items) > MAX_KEYED_ROWS || !table->pointer;
    if (failed) PyErr_SetString(PyExc_ValueError, "add_draw: a table is empty, too large or has too many rows");
    table->size = (uint32_t)size;
    table->keyed = (uint32_t)PyTuple_GET_SIZE(items);
    if (!failed) memcpy(table->template, template, (size_t)size);
    for (Py_ssize_t i = 0; !failed && i < PyTuple_GET_SIZE(items); i++) {
        unsigned int offset;
        const char *name;
        Py_ssize_t name_size;
        keyed_row *row = &table->rows[i];
        failed = !PyArg_ParseTuple(PyTuple_GET_ITEM(items, i), "Iy#", &offset, &name, &name_size);
        if (!failed && (name_size <= 0 || name_size > DRAW_NAME_BYTES || offset % 8 || offset + 16 > table->size)) {
            PyErr_SetString(PyExc_ValueError, "add_draw: a keyed row lies outside its table, or its name is too long");
            failed = 1;
        }
        if (failed) break;
        row->offset = offset;
        row->name_size = (uint32_t)name_size;
        memcpy(row->name, name, (size_t)name_size);
    }
    Py_DECREF(items);
    return failed ? -1 : 0;
}

PyObject *add_draw(PyObject *self, PyObject *args) {
    unsigned long long graph;
    PyObject *tables;
    if (!PyArg_ParseTuple(args, "KO", &graph, &tables)) return NULL;
    if (!core.keyed || !core.on_gpu || hidden_open()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "add_draw: the core is not initialized on a GPU");
        return NULL;
    }
    int slot = ST->kernel || ST->busy || ST->draw_count >= MAX_DRAWS ? -1 : ST->draw_count;
    hidden_close();
    if (slot < 0) {
        PyErr_Format(PyExc_RuntimeError, "add_draw: only before the submission's import, up to %d draws", MAX_DRAWS);
        return NULL;
    }
    PyObject *items = PySequence_Tuple(tables);
    if (!items) return NULL;
    draw_plan *plan = &plans[slot].plan;
    int failed = PyTuple_GET_SIZE(items) < 1 || PyTuple_GET_SIZE(items) > MAX_DRAW_TABLES, keyed = 0;
    if (failed) PyErr_SetString(PyExc_ValueError, "add_draw: a draw has 1 to 4 kernel tables");
    for (Py_ssize_t i = 0; !failed && i < PyTuple_GET_SIZE(items); i++) {
        failed = read_table(PyTuple_GET_ITEM(items, i), &plan->table[i]);
        keyed += failed ? 0 : (int)plan->table[i].keyed;
        plan->tables = (uint32_t)(i + 1);
    }
    Py_DECREF(items);
    if (!failed && !keyed) {
        PyErr_SetString(PyExc_ValueError, "add_draw: the draw reads no seed (no keyed row)");
        failed = 1;
    }
    failed = failed || cuda_failed(cu.CtxSetCurrent(core.context), "cuCtxSetCurrent") ||
             cuda_failed(cu.GraphInstantiate(&plan->exec, (CUgraph)(uintptr_t)graph, 0), "instantiating a draw's graph");
    if (failed) {
        memset(&plans[slot], 0, sizeof plans[slot]);
        return NULL;
    }
    if (core_mprotect(&plans[slot], sizeof plans[slot], PROT_READ)) return PyErr_SetFromErrno(PyExc_OSError);
    syscall(SYS_mseal, (void *)&plans[slot], sizeof plans[slot], 0UL); /* best effort, as the core's tables */
    if (hidden_open()) return NULL;
    ST->draw_count = slot + 1;
    hidden_close();
    return PyLong_FromLong(slot);
}

int replay_draw(int slot, long long index, const uint8_t sealed[8], unsigned long long *seed) {
    uint8_t message[5 + 8] = {'s', 'e', 'e', 'd', ':'}, pad[32];
    if (slot < 0 || slot >= ST->draw_count) {
        PyErr_SetString(PyExc_RuntimeError, "time_call: no such draw");
        return -1;
    }
    const draw_plan *plan = &plans[slot].plan;
    memcpy(message + 5, &index, 8);
    hmac_sha256(ST->stage_key, KEY_BYTES, message, sizeof message, pad);
    *seed = 0;
    for (int i = 7; i >= 0; i--) *seed = *seed << 8 | (uint8_t)(sealed[i] ^ pad[i]);
    explicit_bzero(pad, sizeof pad);
    int failed = 0;
    for (uint32_t t = 0; !failed && t < plan->tables; t++) {
        const draw_table *table = &plan->table[t];
        memcpy(scratch, table->template, table->size);
        for (uint32_t r = 0; !failed && r < table->keyed; r++) {
            uint32_t keys[2];
            int64_t words[2];
            failed = stream_keys(*seed, table->rows[r].name, table->rows[r].name_size, keys);
            words[0] = keys[0];
            words[1] = keys[1];
            memcpy(scratch + table->rows[r].offset, words, sizeof words);
        }
        if (failed) PyErr_SetString(PyExc_RuntimeError, "a draw's stream name is too long");
        /* From pageable memory: the call returns once the bytes are staged, so the scratch can go. */
        failed = failed || cuda_failed(cu.MemcpyHtoDAsync(table->pointer, scratch, table->size, ST->stream),
                                       "writing a draw's table");
        explicit_bzero(scratch, table->size);
    }
    failed = failed || cuda_failed(cu.GraphLaunch(plan->exec, ST->stream), "replaying a draw");
    return failed ? -1 : 0;
}

PyObject *stream_keys_bytes(PyObject *self, PyObject *args) {
    unsigned long long seed;
    const char *name;
    Py_ssize_t size;
    uint32_t keys[2];
    if (!PyArg_ParseTuple(args, "Ky#", &seed, &name, &size)) return NULL;
    if (stream_keys(seed, name, (size_t)size, keys)) {
        PyErr_SetString(PyExc_ValueError, "stream_keys: the name is too long");
        return NULL;
    }
    return Py_BuildValue("(II)", keys[0], keys[1]);
}
