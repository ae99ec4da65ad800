/* Probes of the interpreter for harness._sealed: hooks that could watch the worker's Python (profile,
 * trace, sys.monitoring) and torch modes that would run the submission's Python inside the core.
 * Every probe calls a C function captured before the import or reads the thread states directly:
 * none goes through a field of a Python object that the submission could rewrite later. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>

#include "python_hooks.h"

#define MONITORING_TOOLS 6 /* sys.monitoring's tool ids 0..5 */

typedef PyObject *(*fast_function)(PyObject *, PyObject *const *, Py_ssize_t);
typedef PyObject *(*fast_keywords_function)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);
typedef PyObject *(*keywords_function)(PyObject *, PyObject *, PyObject *);

static int capture(PyObject *callable, const char *name, c_function *out) {
    if (!PyCFunction_Check(callable) || (PyCFunction_GET_FLAGS(callable) & METH_METHOD)) {
        PyErr_Format(PyExc_RuntimeError, "sealed timer probe %s is not a plain builtin function", name);
        return -1;
    }
    out->meth = PyCFunction_GET_FUNCTION(callable);
    out->self = PyCFunction_GET_SELF(callable);
    out->flags = PyCFunction_GET_FLAGS(callable);
    Py_XINCREF(out->self);  /* kept for the process's life, like the function it belongs to */
    return 0;
}

int capture_probes(PyObject *dict, interpreter_probes *probes) {
    PyObject *functions = PyDict_GetItemString(dict, "function_stack_len");
    PyObject *dispatch = PyDict_GetItemString(dict, "dispatch_stack_len");
    PyObject *get_tool = PyDict_GetItemString(dict, "monitoring_get_tool");
    if (!functions || !dispatch || !get_tool) {
        PyErr_SetString(PyExc_RuntimeError, "sealed timer probes missing (function_stack_len, dispatch_stack_len, "
                        "monitoring_get_tool)");
        return -1;
    }
    if (capture(functions, "function_stack_len", &probes->function_stack_len) ||
        capture(dispatch, "dispatch_stack_len", &probes->dispatch_stack_len))
        return -1;
    probes->monitoring_get_tool.meth = NULL;
    return get_tool == Py_None ? 0 : capture(get_tool, "monitoring_get_tool", &probes->monitoring_get_tool);
}

PyObject *call_captured(const c_function *f, PyObject *arg) {
    int flags = f->flags & ~(METH_CLASS | METH_STATIC | METH_COEXIST);
    if (flags == METH_NOARGS) return f->meth(f->self, NULL);
    if (!arg) {
        PyErr_SetString(PyExc_TypeError, "a captured probe needs its argument");
        return NULL;
    }
    if (flags == METH_O) return f->meth(f->self, arg);
    if (flags == METH_FASTCALL) return ((fast_function)(void (*)(void))f->meth)(f->self, &arg, 1);
    if (flags == (METH_FASTCALL | METH_KEYWORDS))
        return ((fast_keywords_function)(void (*)(void))f->meth)(f->self, &arg, 1, NULL);
    PyObject *args = PyTuple_Pack(1, arg), *result = NULL;
    if (!args) return NULL;
    if (flags == METH_VARARGS) result = f->meth(f->self, args);
    else if (flags == (METH_VARARGS | METH_KEYWORDS)) result = ((keywords_function)(void (*)(void))f->meth)(f->self, args, NULL);
    else PyErr_Format(PyExc_RuntimeError, "a captured probe has calling convention 0x%x", f->flags);
    Py_DECREF(args);
    return result;
}

static long long captured_length(const c_function *f) {
    PyObject *value = call_captured(f, NULL);
    if (!value) return -1;
    long long length = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return length;
}

int torch_mode_active(const interpreter_probes *probes) {
    long long functions = captured_length(&probes->function_stack_len);
    long long dispatch = functions < 0 ? -1 : captured_length(&probes->dispatch_stack_len);
    if (functions < 0 || dispatch < 0) return -1;
    return functions > 0 || dispatch > 0;
}

const char *watching_hook(const interpreter_probes *probes, int threads) {
    static char tool[48];
    for (PyThreadState *t = PyInterpreterState_ThreadHead(PyInterpreterState_Get()); t && threads; t = PyThreadState_Next(t))
        if (t->c_profilefunc || t->c_tracefunc) return "a profile or trace function (sys.setprofile, sys.settrace)";
    if (!probes->monitoring_get_tool.meth) return NULL;
    for (long id = 0; id < MONITORING_TOOLS; id++) {
        PyObject *number = PyLong_FromLong(id), *name = number ? call_captured(&probes->monitoring_get_tool, number) : NULL;
        Py_XDECREF(number);
        int in_use = name != Py_None;
        Py_XDECREF(name);
        if (!name) PyErr_Clear();  /* a failed probe counts as a tool in use: the call is refused */
        if (in_use) {
            snprintf(tool, sizeof tool, "sys.monitoring tool %ld", id);
            return tool;
        }
    }
    return NULL;
}

void clear_thread_hooks(void) {
    /* An exception already raised (custom_kernel's own, on the way to the worker) is kept: only what
     * the clearing raises is dropped. */
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *pending = PyErr_GetRaisedException();
    PyEval_SetProfileAllThreads(NULL, NULL);
    PyEval_SetTraceAllThreads(NULL, NULL);
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    for (PyThreadState *t = PyInterpreterState_ThreadHead(PyInterpreterState_Get()); t; t = PyThreadState_Next(t)) {
        if (t->c_profilefunc) _PyEval_SetProfile(t, NULL, NULL);
        if (t->c_tracefunc) _PyEval_SetTrace(t, NULL, NULL);
    }
#endif
    PyErr_Clear();  /* an audit hook that refused: the next call's entry check still sees the hook */
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(pending);
#else
    PyErr_Restore(type, value, traceback);
#endif
}
