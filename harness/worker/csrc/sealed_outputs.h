/* Outputs of one timed call, as harness._sealed reads and digests them (sealed_outputs.c). */
#ifndef NVFP4_SEALED_OUTPUTS_H
#define NVFP4_SEALED_OUTPUTS_H
#include <Python.h>
#include <stdint.h>

typedef struct {
    PyObject *dtype, *shape, *stride;
    long long offset;
    unsigned long long pointer, nbytes;
} output_view;

/* 1 when a torch mode other than an unmodified default-device context is active, -1 on error. */
int foreign_mode_active(PyObject *hooks);
/* Fill *view for an exact torch.Tensor on the expected device; -1 with an exception otherwise. */
int describe_output(PyObject *hooks, int on_gpu, PyObject *tensor, output_view *view);
/* SHA-256 over each output's dtype, shape, stride, offset, size and bytes (harness.seal mirrors it). */
void digest_outputs(const output_view *views, int count, const uint8_t *bytes, uint8_t out[32]);
#endif
