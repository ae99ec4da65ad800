/* Drawn inputs (drawn_inputs.c): on a GPU, each ranked call's inputs are drawn by the core, replaying a
 * CUDA graph of the problem's own draw captured before the submission's import, with the stream keys
 * derived from a seed that reaches the core encrypted (docs/security.md, "Drawn and staged inputs"). */
#ifndef NVFP4_DRAWN_INPUTS_H
#define NVFP4_DRAWN_INPUTS_H
#include <Python.h>
#include <stdint.h>

#define MAX_DRAWS 128          /* captured draws (up to DRAW_PLACEMENTS, harness/contract/messages.py, a case shape) */
#define MAX_DRAW_TABLES 4      /* kernel tables per draw (the words' hash, a codes table per scale format) */
#define MAX_KEYED_ROWS 64      /* hash-table rows per table, each keyed by a stream name */
#define DRAW_NAME_BYTES 48
#define MAX_TABLE_BYTES 4096

/* add_draw(graph, tables): before the submission's import, on a GPU. ``graph``: a captured cudaGraph_t
 * (torch's, kept alive by the worker), which the core instantiates into an executable graph of its own;
 * ``tables``: [(device address, template bytes, [(byte offset, stream name), ...]), ...], every kernel
 * table the graph reads, which the core writes in full before each replay, the keys of stream ``name``
 * (two int64 words) at each offset. Returns the draw's slot. */
PyObject *add_draw(PyObject *self, PyObject *args);
/* Call ``index`` of draw ``slot``: the seed unmasked (``sealed`` XOR the first 8 bytes of
 * HMAC-SHA256(staging key, "seed:" index)), the tables written and the graph launched on the core's
 * stream. The hidden page is open and the GPU idle. *seed: the call's seed (for the MAC). -1 with an
 * exception. */
int replay_draw(int slot, long long index, const uint8_t sealed[8], unsigned long long *seed);
/* stream_keys(seed, name): the two 32-bit keys of a stream, as the core derives them (self-test). */
PyObject *stream_keys_bytes(PyObject *self, PyObject *args);
#endif
