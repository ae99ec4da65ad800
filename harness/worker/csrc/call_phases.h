/* Where the last timed call's host time went inside the core: shown, never trusted (issue 33). */
#ifndef NVFP4_CALL_PHASES_H
#define NVFP4_CALL_PHASES_H
#include <Python.h>

typedef enum {
    PHASE_BEGIN,   /* time_call entered (hooks and modes checked, the page opened) */
    PHASE_SYNCED,  /* every stream idle (cuCtxSynchronize) */
    PHASE_QUIET,   /* persisting L2 lines reset */
    PHASE_DRAWN,   /* a drawn call's draw queued */
    PHASE_HELD,    /* hold-and-flush kernel and start event queued */
    PHASE_KERNEL,  /* custom_kernel returned */
    PHASE_OPENED,  /* the call-state page opened (the supervisor's round trip) */
    PHASE_CLOSED,  /* end event and stamp queued */
    PHASE_WAITED,  /* the first copy and its leaves done: waits for the GPU's hold, flush and the kernel */
    PHASE_IDLE,    /* every stream idle after the call */
    PHASE_COPIED,  /* the second copy, both copies' leaves and the host's bytes back */
    PHASE_CLOCKED, /* both clocks read */
    PHASE_SIGNED,  /* digest and MAC, the page closed */
    PHASE_PLACED,  /* outputs placed in the parent's file or the reply */
    PHASE_COUNT
} call_phase;

void phase_mark(call_phase phase);    /* now, for `phase` of the current call */
PyObject *last_phases(PyObject *self, PyObject *unused); /* {name: ms since the phase before} */

#endif
