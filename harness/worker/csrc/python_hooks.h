/* What of the interpreter could run the submission's Python while the core works: profile and trace
 * hooks, sys.monitoring tools, torch function and dispatch modes (python_hooks.c). */
#ifndef NVFP4_PYTHON_HOOKS_H
#define NVFP4_PYTHON_HOOKS_H
#include <Python.h>

/* A builtin function's C entry point, captured before the import: calling it runs that C code,
 * whatever is later written into the function object's fields (its vectorcall slot, its method
 * table entry is read once here). */
typedef struct {
    PyCFunction meth;
    PyObject *self;
    int flags;
} c_function;

typedef struct {
    c_function function_stack_len, dispatch_stack_len; /* torch._C: the two mode stacks' lengths */
    c_function monitoring_get_tool;                    /* sys.monitoring.get_tool (3.12+), else meth NULL */
} interpreter_probes;

/* Fill *probes from the dict sealed_core._sealed_hooks builds; -1 with an exception. */
int capture_probes(PyObject *dict, interpreter_probes *probes);
/* Call a captured function with one argument (NULL: none); a new reference, or NULL with an exception. */
PyObject *call_captured(const c_function *function, PyObject *arg);
/* Which hook could watch the worker's Python, as a short name (a thread's profile or trace function,
 * unless `threads` is 0; a sys.monitoring tool), or NULL when none; the probes run no Python code. */
const char *watching_hook(const interpreter_probes *probes, int threads);
/* 1 when a torch function or dispatch mode is active (any, a default-device context included), 0
 * when none, -1 with an exception. */
int torch_mode_active(const interpreter_probes *probes);
/* Remove every thread's profile and trace function (after the import and after each call, when no
 * input of a call exists in Python). May run audit hooks: never call it inside the timed window. */
void clear_thread_hooks(void);
#endif
