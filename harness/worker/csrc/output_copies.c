/* The copies of a timed call's outputs into memory the core owns (harness._sealed): the first queued
 * right behind the end event and the second once every stream is idle, so that work of the
 * submission still running after the end event shows as the two copies differing (`unfinished`,
 * digest_tree.c compares them). On the CPU one memcpy. Pinned on a GPU, so the copies need no staging. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "core_state.h"
#include "output_copies.h"

static int reserve_host(size_t bytes) {
    if (bytes <= ST->host_capacity) return 0;
    for (int i = 0; i < 2; i++) {
        if (core.on_gpu) {
            if (ST->host_copy[i]) cu.MemFreeHost(ST->host_copy[i]);
            ST->host_copy[i] = NULL;
            CUI(cu.MemAllocHost((void **)&ST->host_copy[i], bytes), "pinned host allocation");
        } else {
            free(ST->host_copy[i]);
            if (!(ST->host_copy[i] = malloc(bytes))) { PyErr_NoMemory(); return -1; }
        }
    }
    ST->host_capacity = bytes;
    return 0;
}

int copy_outputs(const output_view *views, int count, size_t total, const uint8_t **first, const uint8_t **second) {
    if (reserve_host(total ? total : 1)) return -1;
    for (int pass = 0; pass < (core.on_gpu ? 2 : 1); pass++) {
        size_t at = 0;
        for (int i = 0; i < count; i++) {
            if (core.on_gpu && views[i].nbytes)
                CUI(cu.MemcpyDtoHAsync(ST->host_copy[pass] + at, views[i].pointer, views[i].nbytes, core.stream), "output copy");
            else if (views[i].nbytes)
                memcpy(ST->host_copy[pass] + at, (const void *)(uintptr_t)views[i].pointer, views[i].nbytes);
            at += views[i].nbytes;
        }
        if (core.on_gpu) {
            CUI(cu.StreamSynchronize(core.stream), "synchronize after the output copy");
            CUI(cu.CtxSynchronize(), "synchronize every stream");
        }
    }
    *first = ST->host_copy[0];
    *second = core.on_gpu ? ST->host_copy[1] : NULL;
    return 0;
}
