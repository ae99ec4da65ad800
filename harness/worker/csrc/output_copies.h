/* The copies of a timed call's outputs into memory the core owns (output_copies.c). */
#ifndef NVFP4_OUTPUT_COPIES_H
#define NVFP4_OUTPUT_COPIES_H
#include <stdint.h>

#include "sealed_outputs.h"

typedef struct {
    const uint8_t *bytes;   /* every output's bytes, one after another, in the core's host memory */
    const uint8_t *leaves;  /* on a GPU: their digest leaves (digest_tree.h), hashed there; NULL on the CPU */
    int differs;            /* on a GPU: the outputs changed after the end event (work left running) */
} output_copy;

/* On a GPU: every output copied into the core's device memory right behind the end event and hashed
 * there; once every stream is idle, copied and hashed again; the leaves of both and the first copy's
 * bytes brought to the host. On the CPU, one memcpy. 0, or -1 with an exception. */
int copy_outputs(const output_view *views, int count, size_t total, output_copy *copy);
#endif
