/* Inputs staged by the parent (staged_inputs.c): ciphertext in a file of the parent's, decrypted by the
 * core inside time_call, into the call's own tensors, after every Python hook of the submission's has
 * had its last chance to run before the timer (docs/security.md, "Staged inputs"). */
#ifndef NVFP4_STAGED_INPUTS_H
#define NVFP4_STAGED_INPUTS_H
#include <Python.h>
#include <stdint.h>

#include "sealed_outputs.h"

#define MAX_STAGED 64
#define STAGE_ALIGN 64 /* each operand's bytes start at a multiple of one ChaCha20 block in the file */

/* One operand's storage, read through the captured torch entry points before the hidden page opens;
 * ``storage`` (a new reference) keeps its memory alive until the call's end, whatever custom_kernel
 * does to the tensor. */
typedef struct {
    PyObject *storage;
    unsigned long long pointer, nbytes;
    int kept;                /* custom_kernel must leave it unchanged (an operand, not an output buffer) */
} staged_operand;

/* map_inputs(fd), once, before the syscall filter: the parent's staging file, mapped read-only. */
PyObject *map_inputs(PyObject *self, PyObject *args);
/* The storages of a sequence of exact tensors on the core's device (bit i of ``kept``: tensor i must stay
 * unchanged); -1 with an exception. */
int describe_operands(const torch_hooks *hooks, int on_gpu, PyObject *operands, unsigned long long kept,
                      staged_operand *out, int *count);
/* Decrypt call ``index``'s inputs (key on the hidden page, which is open) into the operands: straight
 * into host memory, or through the core's host buffer into device memory. -1 with an exception. */
int stage_inputs(const uint8_t key[32], long long index, int on_gpu, const staged_operand *operands, int count);
/* 1 when a kept operand's bytes differ from what stage_inputs wrote (custom_kernel changed its inputs), 0 when
 * not, -1 with an exception. The hidden page is open; no Python runs. */
int inputs_changed(int on_gpu, const staged_operand *operands, int count);
void release_operands(staged_operand *operands, int count);
/* chacha20(key, nonce, counter, data): RFC 8439's cipher over bytes (the self-test against its vectors). */
PyObject *chacha20_bytes(PyObject *self, PyObject *args);
#endif
