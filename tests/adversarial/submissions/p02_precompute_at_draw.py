"""Pure Python, no ctypes: compute each call's answer while the worker draws its inputs, untimed.

A KNOWN HOLE (docs/security.md, "Inputs are drawn in the worker's Python"): the worker draws a
call's inputs with Python code the submission can reach (here: the worker instance's `reference`
attribute, swapped for a proxy), before the compiled core starts its timer. The proxy runs the
honest kernel on the fresh inputs right there; custom_kernel then only hands back the stored
answer. This row expects the attack to pass, so the suite notices the day it stops working.
"""

import types

import _honest
import _reach
import torch

worker = _reach.worker()
answers = {}


def draw_and_solve(**case):
    data = worker_reference.generate_input(**case)
    answer = _honest.gemv(data, out=torch.empty_like(data[-1]))
    if answer.is_cuda:
        torch.cuda.synchronize()
    answers[id(data)] = answer
    return data


worker_reference = worker.reference
worker.reference = types.SimpleNamespace(generate_input=draw_and_solve)


def custom_kernel(data):
    answer = answers.pop(id(data), None)
    return answer if answer is not None else _honest.gemv(data)
