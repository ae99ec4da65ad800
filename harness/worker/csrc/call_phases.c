/* Where the last timed call's host time went inside the core (issue 33: a ranked call's harness time).
 * Plain writable memory: the submission can change these marks, so they are only ever shown, never
 * used for a verdict or a time. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "call_phases.h"
#include "gpu_window.h"

static const char *const NAMES[PHASE_COUNT] = {"begin", "sync", "quiet", "draw", "hold", "kernel", "open", "close",
                                              "wait", "idle", "copies", "clocks", "sign", "place"};
static double marks[PHASE_COUNT];

void phase_mark(call_phase phase) {
    if (phase == PHASE_BEGIN)
        for (int i = 0; i < PHASE_COUNT; i++) marks[i] = 0.0;
    marks[phase] = host_clock_us();
}

PyObject *last_phases(PyObject *self, PyObject *unused) {
    PyObject *spent = PyDict_New();
    double before = marks[PHASE_BEGIN];
    for (int i = PHASE_BEGIN + 1; spent && before > 0.0 && i < PHASE_COUNT; i++) {
        if (marks[i] <= 0.0) continue; /* a phase this call had none of (no draw) */
        PyObject *ms = PyFloat_FromDouble((marks[i] - before) / 1e3);
        if (!ms || PyDict_SetItemString(spent, NAMES[i], ms)) { Py_XDECREF(ms); Py_CLEAR(spent); break; }
        Py_DECREF(ms);
        before = marks[i];
    }
    return spent;
}
