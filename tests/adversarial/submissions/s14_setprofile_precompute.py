"""Issue 40, precompute (no native code): sys.setprofile sees every Python function the worker calls;
on entry to the function that hands a call's inputs to the core, the hook solves the call, untimed,
and custom_kernel returns the stored answer (c unfilled when the hook never saw the inputs). The
core now removes every thread's profile and trace function after the import and after each call,
before the next inputs exist, so the hook never fires and the unfilled output fails the check."""

import sys

import _honest
import torch

answers = {}


def watch(frame, event, arg):
    data = frame.f_locals.get("data") if event == "call" else None
    if isinstance(data, tuple) and len(data) == 7 and id(data) not in answers:
        answers[id(data)] = _honest.gemv(data, out=torch.empty_like(data[-1]))
        if data[-1].is_cuda:
            torch.cuda.synchronize()


sys.setprofile(watch)


def custom_kernel(data):
    sys.setprofile(watch)  # again, for the worker's Python after this call
    answer = answers.pop(id(data), None)
    return answer if answer is not None else data[-1]
