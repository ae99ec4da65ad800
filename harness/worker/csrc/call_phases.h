/* Where the last timed call's host time went inside the core: shown, never trusted (issue 33). */
#ifndef NVFP4_CALL_PHASES_H
#define NVFP4_CALL_PHASES_H
#include <Python.h>

typedef enum {
    PHASE_BEGIN,   /* time_call entered (hooks and modes checked, the page opened) */
    PHASE_QUIET,   /* every stream idle */
    PHASE_DRAWN,   /* a drawn call's draw queued */
    PHASE_HELD,    /* hold-and-flush kernel and start event queued */
    PHASE_KERNEL,  /* custom_kernel returned */
    PHASE_OPENED,  /* the call-state page opened (the supervisor's round trip) */
    PHASE_CLOSED,  /* end event and stamp queued */
    PHASE_COPIED,  /* outputs copied to the host: waits for the GPU's hold, draw and the kernel */
    PHASE_SIGNED,  /* second clock read, digest and MAC */
    PHASE_PLACED,  /* outputs placed in the parent's file or the reply */
    PHASE_COUNT
} call_phase;

void phase_mark(call_phase phase);    /* now, for `phase` of the current call */
PyObject *last_phases(PyObject *self, PyObject *unused); /* {name: ms since the phase before} */

#endif
