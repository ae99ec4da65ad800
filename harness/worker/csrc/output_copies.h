/* The copies of a timed call's outputs into memory the core owns (output_copies.c). */
#ifndef NVFP4_OUTPUT_COPIES_H
#define NVFP4_OUTPUT_COPIES_H
#include <stdint.h>

#include "sealed_outputs.h"

typedef struct {
    const uint8_t *bytes;   /* every output's bytes, one after another, in the core's host memory */
    const uint8_t *leaves;  /* on a GPU: their digest leaves (digest_tree.h), hashed there; NULL on the CPU */
    int differs;            /* on a GPU: the outputs changed after the end event (work left running) */
    int in_snapshot;        /* the first copy lies in the parent's device snapshot (``bytes`` unset) */
    unsigned long long at[MAX_OUTPUTS];  /* on a GPU: each output's offset in a device copy (the snapshot's) */
} output_copy;

/* On a GPU: every output copied right behind the end event and hashed there, into the parent's device
 * snapshot where it has one and the outputs leave the pipe and fit, else into the core's device memory;
 * once every stream is idle, copied and hashed again; the leaves of both, and the first copy's bytes
 * unless they lie in the snapshot, brought to the host. On the CPU, one memcpy. 0, or -1 with an
 * exception. */
int copy_outputs(const output_view *views, int count, size_t total, output_copy *copy);
/* map_snapshot(fd, bytes, min_bytes), once, before the import: the parent's device snapshot (a CUDA
 * allocation it exported as a POSIX descriptor), mapped read-write into this context; the descriptor is
 * closed. Calls of at least ``min_bytes`` of outputs that fit are copied there. */
PyObject *map_snapshot(PyObject *self, PyObject *args);
/* signal_window(fd): where a timed call says that its window is over on the GPU (the result channel):
 * right after the first copy is done, a ``window_closed`` message (harness/contract/messages.py) for the
 * call's index, so that the parent's own GPU work for the check can start while the core still copies,
 * digests and signs. Advisory: nothing it says is trusted (a false one only runs the parent's work
 * beside the submission's own window), and it lives in ordinary memory. -1: none (the default). */
PyObject *signal_window(PyObject *self, PyObject *args);
PyObject *window_message(PyObject *self, PyObject *args); /* window_message(index): the bytes sent (self-test) */
#endif
