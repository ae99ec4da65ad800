/* Inputs staged by the parent on the CPU (staged_inputs.c; a GPU draws them: drawn_inputs.h): ciphertext
 * in a file of the parent's, decrypted by the core inside time_call, into the call's own tensors, after every Python hook of the submission's has
 * had its last chance to run before the timer (docs/security.md, "Drawn and staged inputs"). */
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
/* The storages of a sequence of exact tensors in host memory (bit i of ``kept``: tensor i must stay
 * unchanged); -1 with an exception. */
int describe_operands(const torch_hooks *hooks, PyObject *operands, unsigned long long kept,
                      staged_operand *out, int *count);
/* Decrypt call ``index``'s inputs (key on the hidden page, which is open) into the operands, through the
 * core's buffer of the plaintext. -1 with an exception. */
int stage_inputs(const uint8_t key[32], long long index, const staged_operand *operands, int count);
/* 1 when a kept operand's bytes differ from what stage_inputs wrote (custom_kernel changed its inputs), else 0.
 * The hidden page is open; no Python runs. */
int inputs_changed(const staged_operand *operands, int count);
void release_operands(staged_operand *operands, int count);
/* chacha20(key, nonce, counter, data): RFC 8439's cipher over bytes (the self-test against its vectors). */
PyObject *chacha20_bytes(PyObject *self, PyObject *args);
#endif
