/* harness._sealed: the timed loop and the result MAC, out of reach of the submission's Python.
 *
 * Everything that decides a time lives in the core's memory: the per-run key (key_page.c), what init
 * fixed (a sealed page), and what a call changes or hides (indexes, the bound custom_kernel, events,
 * buffers, the overhead: a page the core keeps inaccessible outside its own code, core_pages.c).
 * Python receives only finished results: (time, output bytes, MAC over call index, seed, time,
 * overhead, the unfinished and exposed flags, output digest and the second clock's reading, which the
 * parent judges over a whole case). See docs/security.md, "The timed window", for what this does and
 * does not stop.
 *
 * One call (time_call), in order: refuse it if a profile, trace or sys.monitoring hook or a torch
 * mode is active (they would have watched the inputs being drawn); every stream idle; a drawn call's
 * inputs drawn on the call's stream, one of the core's (drawn_inputs.c); hold, flush, start event (gpu_window.c); custom_kernel(data); refuse it if a torch mode is left; read each
 * output's layout through the captured torch entry points (before the end event: whatever that
 * triggers is timed); end event and second clock; then only driver calls and C code until the MAC;
 * then every thread's profile and trace functions are removed. The collector is off throughout. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <unistd.h>

#include "call_phases.h"
#include "core_state.h"
#include "digest_tree.h"
#include "drawn_inputs.h"
#include "gpu_window.h"
#include "output_copies.h"
#include "python_hooks.h"
#include "sealed_outputs.h"
#include "sha256.h"
#include "staged_inputs.h"

#define MAX_OUTPUT_BYTES (1ULL << 31)

/* The hidden page open only to reset `busy` (a call that ends without a MAC). */
static void release_call(void) {
    if (hidden_open()) return;
    ST->busy = 0;
    hidden_close();
}

/* init(key_fd, stream_handle or None, l2_bytes, hooks[, leaf_ptx]): once per process, before the import;
 * leaf_ptx (a GPU's): the outputs' leaf kernel (harness/contract/leaf_hash.py). Returns (overhead_us,
 * spread_us, overhead from graphs, protection report, window description, the call streams' handles: call
 * `index` runs on handle index % CALL_STREAMS, none on a CPU). */
static PyObject *sealed_init(PyObject *self, PyObject *args) {
    int fd;
    PyObject *stream_handle, *hook_dict;
    unsigned long long l2_bytes;
    const char *leaf_ptx = NULL;
    if (!PyArg_ParseTuple(args, "iOKO!|z", &fd, &stream_handle, &l2_bytes, &PyDict_Type, &hook_dict, &leaf_ptx))
        return NULL;
    if (core.keyed) { PyErr_SetString(PyExc_RuntimeError, "the sealed timer is already initialized"); return NULL; }
    if (hidden_create()) { close(fd); return NULL; }
    int failed = load_key(fd);
    close(fd);
    failed = failed || capture_hooks(hook_dict, &core.hooks) || capture_probes(hook_dict, &core.probes);
    if (!failed && stream_handle != Py_None) {
        unsigned long long handle = PyLong_AsUnsignedLongLong(stream_handle);
        failed = PyErr_Occurred() || init_gpu(handle, l2_bytes, leaf_ptx);
        core.on_gpu = !failed;
    }
    double overhead = ST->overhead_us, spread = ST->overhead_spread_us;
    char window[256] = "";
    if (core.on_gpu)
        snprintf(window, sizeof window, "hold and flush on %u blocks of %u threads (%s), second clock within %.2f us "
                 "(%.2f us exposed), end stamp's wait up to %.2f us (%.2f us exposed)", core.hold_grid, core.hold_block,
                 core.fills_gpu ? "every thread slot of every SM" : "NOT filling every SM", ST->clock_slack_us[0],
                 ST->clock_slack_us[1], ST->stamp_wait_us[0], ST->stamp_wait_us[1]);
    hidden_close();
    if (failed) return NULL;
    core.keyed = 1;
    PyObject *report = seal_core(); /* nothing in `core` or `cu` may be written after this */
    PyObject *streams = report ? PyTuple_New(core.on_gpu ? CALL_STREAMS : 0) : NULL;
    for (int i = 0; streams && core.on_gpu && i < CALL_STREAMS; i++) {
        PyObject *handle = PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)core.call_streams[i]);
        if (!handle) Py_CLEAR(streams);
        else PyTuple_SET_ITEM(streams, i, handle);
    }
    if (!streams) { Py_XDECREF(report); return NULL; }
    return Py_BuildValue("(ddONsN)", overhead, spread, core.overhead_from_graph ? Py_True : Py_False, report, window,
                         streams);
}

/* bind(loader, path): loader(path) imports the submission; its custom_kernel is the only function
 * time_call will ever call. Once per process: a second bind (the submission's) is refused. */
static PyObject *sealed_bind(PyObject *self, PyObject *args) {
    PyObject *loader, *path;
    if (!PyArg_ParseTuple(args, "OO", &loader, &path)) return NULL;
    if (!core.keyed || hidden_open()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "bind: not initialized or already bound");
        return NULL;
    }
    int refused = ST->kernel || ST->busy;
    ST->busy = ST->busy || !refused;
    hidden_close();
    if (refused) {
        PyErr_SetString(PyExc_RuntimeError, "bind: not initialized or already bound");
        return NULL;
    }
    PyObject *module = PyObject_CallOneArg(loader, path);
    release_call();
    clear_thread_hooks(); /* whatever the import set watches nothing from here on */
    if (!module) return NULL;
    PyObject *found = PyObject_GetAttrString(module, "custom_kernel");
    Py_DECREF(module);
    if (!found) { PyErr_Clear(); Py_RETURN_FALSE; }
    if (!PyCallable_Check(found) || hidden_open()) { Py_DECREF(found); Py_RETURN_FALSE; }
    ST->kernel = found;
    hidden_close();
    Py_RETURN_TRUE;
}

/* The outputs and how they were returned; on success every view is filled from Python, before the
 * end event. Returns NULL (and *why) for a result that is refused, with no exception set. */
static PyObject *read_outputs(PyObject *result, output_view *views, int *count, size_t *total, const char **why) {
    int list = PyList_CheckExact(result) || PyTuple_CheckExact(result);
    PyObject *items = list ? PySequence_Tuple(result) : PyTuple_Pack(1, result);
    if (!items) return NULL;
    *count = (int)PyTuple_GET_SIZE(items);
    *why = *count > MAX_OUTPUTS ? "bad_output" : NULL;
    for (int i = 0; i < *count && !*why; i++)
        if ((PyObject *)Py_TYPE(PyTuple_GET_ITEM(items, i)) != core.hooks.tensor_type) *why = "bad_output";
    int modes = *why ? 0 : torch_mode_active(&core.probes);
    if (modes) *why = modes > 0 ? "modes" : NULL;
    for (int i = 0; i < *count && !*why && !PyErr_Occurred(); i++) {
        if (describe_output(&core.hooks, core.on_gpu, PyTuple_GET_ITEM(items, i), &views[i])) {
            PyErr_Clear(); /* not a dense tensor on this device (sparse, meta, elsewhere): the worker names why */
            *why = "bad_output";
        }
        *total += views[i].nbytes;
    }
    if (!*why && *total > MAX_OUTPUT_BYTES) PyErr_SetString(PyExc_ValueError, "outputs larger than 2 GiB");
    Py_DECREF(items);
    return *why || PyErr_Occurred() ? NULL : PyUnicode_FromString(list ? "list" : "tensor");
}

/* The outputs as the worker sends them: (dtype, shape, stride, offset, bytes or, when they went into
 * the parent's file or lie in its device snapshot, ("file" or "snapshot", where, size)) each. */
static PyObject *output_entries(const output_view *views, int count, const output_copy *copied, size_t total) {
    long long at[MAX_OUTPUTS];
    int mapped = copied->in_snapshot ? 2 : place_outputs(views, count, copied->bytes, total, at);
    PyObject *outputs = mapped < 0 ? NULL : PyList_New(count);
    size_t offset = 0;
    for (int i = 0; outputs && i < count; i++) {
        PyObject *shape = PyTuple_New(views[i].ndim), *stride = PyTuple_New(views[i].ndim), *entry = NULL;
        for (int d = 0; shape && stride && d < views[i].ndim; d++) {
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(views[i].shape[d]));
            PyTuple_SET_ITEM(stride, d, PyLong_FromLongLong(views[i].stride[d]));
        }
        if (mapped == 2) at[i] = (long long)copied->at[i];
        if (shape && stride && !PyErr_Occurred())
            entry = mapped ? Py_BuildValue("(sOOL(sLK))", views[i].dtype, shape, stride, views[i].offset,
                                           mapped == 2 ? "snapshot" : "file", at[i], views[i].nbytes)
                           : Py_BuildValue("(sOOLy#)", views[i].dtype, shape, stride, views[i].offset,
                                           (const char *)copied->bytes + offset, (Py_ssize_t)views[i].nbytes);
        Py_XDECREF(shape);
        Py_XDECREF(stride);
        if (!entry) { Py_CLEAR(outputs); break; }
        PyList_SET_ITEM(outputs, i, entry);
        offset += views[i].nbytes;
    }
    return outputs;
}

/* After custom_kernel returned (the hidden page closed, the collector off): the outputs read, the end
 * event, copies, second clock, digest and MAC. Returns the worker's answer, or NULL with an error. */
static PyObject *seal_call(long long index, unsigned long long seed, PyObject *result, double host_start,
                           const staged_operand *staged, int staged_count) {
    output_view views[MAX_OUTPUTS];
    int count = 0, exposed = 0, unfinished = 0;
    size_t total = 0;
    const char *why = NULL;
    char detail[200] = "";
    double time_us = 0.0, host_us = 0.0, overhead = 0.0;
    clock_reading clock = {0.0, 0.0, 0.0, 0.0}; /* none off the GPU */
    uint8_t digest[32], mac[32], message[5 + 8 + 8 + 8 + 8 + 1 + 1 + 32 + sizeof clock];
    output_copy copied = {0};
    PyObject *structure = read_outputs(result, views, &count, &total, &why);
    if (!structure) {
        release_call();
        return PyErr_Occurred() ? NULL : Py_BuildValue("(sOs)", why, result, "when custom_kernel returned");
    }
    time_us = host_clock_us() - host_start; /* the CPU's time: the outputs' reading included */
    /* Opened read-write and counted, like every opening: the supervisor's round trip is host time
     * before the end event, which the hold covers (close_window releases it once the end is queued). */
    if (hidden_open()) { Py_DECREF(structure); release_call(); return NULL; }
    phase_mark(PHASE_OPENED);
    int failed = core.on_gpu && close_window(&exposed);
    host_us = host_clock_us() - host_start;
    phase_mark(PHASE_CLOSED);
    failed = failed || copy_outputs(views, count, total, &copied);
    phase_mark(PHASE_COPIED);
    failed = failed || (core.on_gpu && read_window(exposed, &clock));
    phase_mark(PHASE_CLOCKED);
    const char *hook = failed ? NULL : watching_hook(&core.probes, 0);
    if (hook) snprintf(detail, sizeof detail, "%s", hook);
    why = hook ? "hooks" : NULL;
    int changed = failed || why || !staged_count ? 0 : inputs_changed(staged, staged_count);
    failed = failed || changed < 0;
    why = changed > 0 ? "inputs" : why;
    overhead = ST->overhead_us;
    if (core.on_gpu) time_us = clock.event_us - overhead;
    if (!failed && !why) {
        failed = digest_outputs(views, count, copied.bytes, copied.leaves, digest) != 0;
        unfinished = copied.differs;
        memcpy(message, "call:", 5);
        memcpy(message + 5, &index, 8); memcpy(message + 13, &seed, 8); memcpy(message + 21, &time_us, 8);
        memcpy(message + 29, &overhead, 8); message[37] = (uint8_t)unfinished; message[38] = (uint8_t)exposed;
        memcpy(message + 39, digest, 32); memcpy(message + 71, &clock, sizeof clock);
        failed = failed || mac_with_key(message, sizeof message, mac);
    }
    ST->busy = 0;
    hidden_close();
    phase_mark(PHASE_SIGNED);
    clear_thread_hooks(); /* a hook custom_kernel set watches nothing: the next inputs do not exist yet */
    PyObject *answer = NULL, *outputs = NULL;
    if (!failed && why) answer = Py_BuildValue("(sOs)", why, result, detail);
    else if (!failed && (outputs = output_entries(views, count, &copied, total)))
        answer = Py_BuildValue("(sddOOOOy#O(dddd))", "ok", time_us, host_us, unfinished ? Py_True : Py_False,
                               exposed ? Py_True : Py_False, structure, outputs, (const char *)mac, (Py_ssize_t)32, result,
                               clock.event_us, clock.clock_us, clock.gap_us, clock.allowance_us);
    phase_mark(PHASE_PLACED);
    Py_XDECREF(outputs);
    Py_DECREF(structure);
    return answer;
}

/* time_call(data, index, seed, sleep_us[, staged, kept, draw, sealed]): see the file's comment. Indexes
 * only grow, and calls do not nest (no MAC for a replay). A refused call is answered (kind, result, why)
 * with no MAC. On the CPU, ``staged``: the call's tensors (every one of ``data``, in order), into which the
 * core decrypts the parent's staged inputs for this index before the call (staged_inputs.c); ``kept``: a
 * bit per tensor that custom_kernel must leave unchanged (its operands, not its output buffers): after the
 * call the core refuses one where such a tensor changed ("inputs"). On a GPU, ``draw`` (a slot of add_draw)
 * and ``sealed`` (the call's seed, masked): the core replays that draw under the seed between the idle GPU
 * and the hold (drawn_inputs.c), ``data`` holds the draw's tensors, and the MAC signs the unmasked seed. */
static PyObject *sealed_time_call(PyObject *self, PyObject *args) {
    PyObject *data, *kernel, *result, *answer = NULL, *operands = Py_None;
    long long index;
    unsigned long long seed, kept = 0;
    double sleep_us;
    staged_operand staged[MAX_STAGED];
    int staged_count = 0, draw = -1;
    const char *sealed = NULL;
    Py_ssize_t sealed_size = 0;
    if (!PyArg_ParseTuple(args, "OLKd|OKiy#", &data, &index, &seed, &sleep_us, &operands, &kept, &draw, &sealed,
                          &sealed_size))
        return NULL;
    if (!core.keyed || (operands != Py_None && core.on_gpu) || (draw >= 0 && (!core.on_gpu || sealed_size != 8)))
        return PyErr_Format(PyExc_RuntimeError, "time_call: %s", !core.keyed ? "not initialized"
                            : draw < 0 ? "staged inputs are the CPU's (a GPU draws them)"
                                       : "a drawn call needs a GPU and an 8-byte sealed seed");
    /* Read through the captured torch entry points before the hidden page opens (they are Python). */
    if (operands != Py_None && describe_operands(&core.hooks, operands, kept, staged, &staged_count)) return NULL;
    /* From here to the MAC no collection runs: one would call the submission's gc.callbacks and
     * finalizers while the outputs are read (s11_gc_callback_in_window.py). */
    int collector_was_on = PyGC_Disable();
    const char *refused = NULL, *hook = NULL;
    int modes = 0;
    double host_start;
    if (hidden_open()) goto done;
    refused = !ST->kernel ? "time_call: no custom_kernel is bound"
                          : ST->busy ? "time_call: a timed call is already running"
                          : index <= ST->last_index ? "time_call: this call was already timed" : NULL;
    hook = refused ? NULL : watching_hook(&core.probes, 1);
    modes = refused || hook ? 0 : torch_mode_active(&core.probes);
    if (refused || hook || modes) {
        hidden_close();
        if (refused) PyErr_SetString(PyExc_RuntimeError, refused);
        else if (hook) answer = Py_BuildValue("(sOs)", "hooks", Py_None, hook);
        else if (modes > 0) answer = Py_BuildValue("(sOs)", "modes", Py_None, "when the call began");
        goto done;
    }
    ST->last_index = index;
    ST->busy = 1;
    kernel = ST->kernel;
    phase_mark(PHASE_BEGIN);
    if (core.on_gpu) use_stream(index); /* SealedTimer made the same stream torch's current one */
    if ((staged_count && stage_inputs(ST->stage_key, index, staged, staged_count)) ||
        (core.on_gpu && (quiet_gpu() || (phase_mark(PHASE_QUIET), 0) ||
                         (draw >= 0 && (replay_draw(draw, index, (const uint8_t *)sealed, &seed) ||
                                        (phase_mark(PHASE_DRAWN), 0))) ||
                         start_window(sleep_us)))) {
        ST->busy = 0;
        hidden_close();
        goto done;
    }
    hidden_close();
    phase_mark(PHASE_HELD);
    host_start = host_clock_us();
    result = PyObject_CallOneArg(kernel, data);
    phase_mark(PHASE_KERNEL);
    PyGC_Disable(); /* custom_kernel may have turned it back on */
    if (result) {
        answer = seal_call(index, seed, result, host_start, staged, staged_count);
    } else {
        release_call();
        clear_thread_hooks();
    }
    Py_XDECREF(result);
done:
    release_operands(staged, staged_count);
    if (collector_was_on) PyGC_Enable();
    return answer;
}

/* recheck(nonce): measure the event overhead again; MAC over (nonce, overhead in use, new, spread).
 * Called by the worker when the parent asks: before each case's timed calls (the value that case's
 * times subtract) and after them (the check that it held). */
static PyObject *sealed_recheck(PyObject *self, PyObject *args) {
    const char *nonce;
    Py_ssize_t nonce_size;
    double in_use = 0.0, fresh = 0.0, spread = 0.0;
    uint8_t message[8 + 16 + 24], mac[32];
    if (!PyArg_ParseTuple(args, "y#", &nonce, &nonce_size)) return NULL;
    int collector_was_on = PyGC_Disable(), failed = 1;
    if (!core.keyed || nonce_size != 16 || hidden_open()) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "recheck: not now");
        goto done;
    }
    in_use = fresh = ST->overhead_us;
    if (ST->busy) PyErr_SetString(PyExc_RuntimeError, "recheck: not now");
    else if (core.on_gpu && (fresh = measure_overhead(&spread)) < -0.5) cuda_failed(1, "overhead recheck");
    else failed = 0;
    if (!failed) {
        memcpy(message, "recheck:", 8); memcpy(message + 8, nonce, 16);
        memcpy(message + 24, &in_use, 8); memcpy(message + 32, &fresh, 8); memcpy(message + 40, &spread, 8);
        failed = mac_with_key(message, sizeof message, mac);
    }
    /* A consistent fresh measurement replaces the one in use unless it rises above the first by more than
     * OVERHEAD_RAISE_MAX_US (an inconsistent one never does); the parent applies the same rule
     * (seal.overhead_moved), so the calls that follow subtract this value. */
    if (!failed && overhead_consistent(fresh, spread) && fresh <= ST->first_overhead_us + OVERHEAD_RAISE_MAX_US)
        ST->overhead_us = fresh;
    hidden_close();
done:
    if (collector_was_on) PyGC_Enable();
    return failed ? NULL : Py_BuildValue("(dddy#)", in_use, fresh, spread, (const char *)mac, (Py_ssize_t)32);
}

static PyObject *sealed_hmac(PyObject *self, PyObject *args) {
    const char *test_key, *message;
    Py_ssize_t key_size, size;
    uint8_t mac[32];
    if (!PyArg_ParseTuple(args, "y#y#", &test_key, &key_size, &message, &size)) return NULL;
    hmac_sha256((const uint8_t *)test_key, (size_t)key_size, message, (size_t)size, mac);
    return PyBytes_FromStringAndSize((const char *)mac, 32);
}

static PyObject *sealed_sha256_backend(PyObject *self, PyObject *unused) {
    return PyUnicode_FromString(sha256_backend());
}

static PyObject *sealed_digest_threads(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(digest_thread_limit());
}

static PyMethodDef methods[] = {
    {"init", sealed_init, METH_VARARGS, "Read the run key from a pipe fd, then set up the CUDA timer."},
    {"bind", sealed_bind, METH_VARARGS, "Import the submission through a loader and bind its custom_kernel."},
    {"time_call", sealed_time_call, METH_VARARGS, "Time one call of the bound kernel; returns a sealed result."},
    {"recheck", sealed_recheck, METH_VARARGS, "Measure the event overhead again; MAC over (nonce, both)."},
    {"map_outputs", map_outputs, METH_VARARGS, "Take the parent's output file: large outputs go there, not the pipe."},
    {"map_snapshot", map_snapshot, METH_VARARGS, "Take the parent's device snapshot: outputs that fit are copied there."},
    {"map_inputs", map_inputs, METH_VARARGS, "Take the parent's staging file: ranked CPU calls' inputs, encrypted."},
    {"signal_window", signal_window, METH_VARARGS, "Say on this fd when a timed call's window is over (advisory)."},
    {"window_message", window_message, METH_VARARGS, "The window_closed message for a call index (self-test)."},
    {"add_draw", add_draw, METH_VARARGS, "Take a captured draw (graph and kernel tables) for drawn calls."},
    {"chacha20", chacha20_bytes, METH_VARARGS, "ChaCha20 (RFC 8439) over bytes (self-test)."},
    {"stream_keys", stream_keys_bytes, METH_VARARGS, "A counter-generator stream's keys under a seed (self-test)."},
    {"hmac_sha256", sealed_hmac, METH_VARARGS, "HMAC-SHA256 of a message under a given key (self-test)."},
    {"sha256_backend", sealed_sha256_backend, METH_NOARGS, "'sha-ni' or 'portable': which SHA-256 digests and signs results."},
    {"digest_threads", sealed_digest_threads, METH_NOARGS, "Threads hashing an output (OMP_NUM_THREADS, 1..8; self-test)."},
    {"last_phases", last_phases, METH_NOARGS, "Where the last timed call's host time went, ms per phase (shown only)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_sealed", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sealed(void) {
    digest_read_thread_limit();  /* before the submission's import: its changes to the environment come too late */
    PyObject *module = PyModule_Create(&module_def);
    if (module && PyModule_AddIntConstant(module, "MAX_DRAWS", MAX_DRAWS) < 0) Py_CLEAR(module);
    if (module && PyModule_AddIntConstant(module, "CALL_STREAMS", CALL_STREAMS) < 0) Py_CLEAR(module);
    return module;
}
