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

/* The torch entry points the core calls between custom_kernel's return and the MAC, captured at
 * init (new references) from the dict harness.worker.sealed_core._sealed_hooks builds before the
 * submission exists. They live in the core's sealed page, not in a Python container: replacing
 * an entry of that dict later, or of any object gc can reach, changes nothing here. */
typedef struct {
    PyObject *tensor_type, *dtype, *is_cuda, *untyped_storage, *storage_data_ptr, *storage_nbytes,
        *storage_offset, *size, *stride, *function_stack_len, *dispatch_stack_len, *function_stack_at,
        *device_context, *device_context_tf, *torch_function_name;
} torch_hooks;

/* Fill *hooks from the dict; -1 with an exception when an entry is missing. */
int capture_hooks(PyObject *dict, torch_hooks *hooks);
/* 1 when a torch mode other than an unmodified default-device context is active, -1 on error. */
int foreign_mode_active(const torch_hooks *hooks);
/* Fill *view for an exact torch.Tensor on the expected device; -1 with an exception otherwise. */
int describe_output(const torch_hooks *hooks, int on_gpu, PyObject *tensor, output_view *view);
/* SHA-256 over each output's dtype, shape, stride, offset, size and its chunks' SHA-256 (digest_tree.h;
 * harness.judge.worker_link.seal mirrors it), with *differs set when ``again`` (a second copy, or NULL) differs
 * from ``bytes``; -1 with an exception when memory runs out. */
int digest_outputs(const output_view *views, int count, const uint8_t *bytes, const uint8_t *again, uint8_t out[32],
                   int *differs);
#endif
