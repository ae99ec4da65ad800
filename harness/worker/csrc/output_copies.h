/* The copies of a timed call's outputs into the core's own host memory (output_copies.c). */
#ifndef NVFP4_OUTPUT_COPIES_H
#define NVFP4_OUTPUT_COPIES_H
#include <stdint.h>

#include "sealed_outputs.h"

/* Copies of every output: the first queued right behind the end event, the second once every stream
 * is idle (on the CPU, one memcpy). Returns the two host buffers in *first, *second (NULL on CPU). */
int copy_outputs(const output_view *views, int count, size_t total, const uint8_t **first, const uint8_t **second);
#endif
