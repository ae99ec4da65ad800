/* Outputs of one timed call, as harness._sealed reads and digests them (sealed_outputs.c). */
#ifndef NVFP4_SEALED_OUTPUTS_H
#define NVFP4_SEALED_OUTPUTS_H
#include <Python.h>
#include <stdint.h>

#define MAX_DIMS 32
#define MAX_OUTPUTS 64  /* tensors a result may hold */

/* One output as C data, read before the end event (so that whatever reading it triggers is timed)
 * and never through Python again until the MAC. */
typedef struct {
    char dtype[32];  /* str(dtype), e.g. "torch.float16" */
    int ndim;
    long long shape[MAX_DIMS], stride[MAX_DIMS];
    long long offset;
    unsigned long long pointer, nbytes;
} output_view;

/* The torch entry points the core reads outputs with, captured at init (new references) from the dict
 * harness.worker.sealed_core._sealed_hooks builds before the submission exists. They live in the
 * core's sealed page, not in a Python container: replacing an entry of that dict later, or of any
 * object gc can reach, changes nothing here. Native code can still rewrite the objects themselves
 * (their vectorcall slot): the core calls them before the end event, so what that runs is timed. */
typedef struct {
    PyObject *tensor_type, *dtype, *is_cuda, *untyped_storage, *storage_data_ptr, *storage_nbytes,
        *storage_offset, *size, *stride;
} torch_hooks;

/* Fill *hooks from the dict; -1 with an exception when an entry is missing. */
int capture_hooks(PyObject *dict, torch_hooks *hooks);
/* Fill *view for an exact torch.Tensor on the expected device; -1 with an exception otherwise. */
int describe_output(const torch_hooks *hooks, int on_gpu, PyObject *tensor, output_view *view);
/* SHA-256 over each output's dtype, shape, stride, offset, size and its chunks' SHA-256 (digest_tree.h;
 * harness.judge.worker_link.seal mirrors it): the chunks' leaves as given (``leaves``, every output's in
 * order: the GPU hashed them), or hashed here from ``bytes`` (NULL); -1 with an exception when memory runs out. */
int digest_outputs(const output_view *views, int count, const uint8_t *bytes, const uint8_t *leaves, uint8_t out[32]);
/* map_outputs(fd, min_bytes), once, before the syscall filter: the parent's output file. From then on
 * a call whose outputs hold min_bytes or more in all is copied into it after the MAC (place_outputs). */
PyObject *map_outputs(PyObject *self, PyObject *args);
/* 1: the outputs' ``bytes`` (``total`` in all) were copied into the parent's file, output i at at[i];
 * 0: they go through the pipe (no file, or smaller than its threshold); -1 with an exception. */
int place_outputs(const output_view *views, int count, const uint8_t *bytes, size_t total, long long *at);
#endif
