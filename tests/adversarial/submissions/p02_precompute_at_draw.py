"""Pure Python, no ctypes: compute each call's answer while the worker draws its inputs, untimed.

Ranked (issue 40), the worker's Python never learns a call's seed. On a GPU its core draws the inputs
from a graph captured before this import, so the proxy below never runs for a ranked call; on the CPU
it draws the tensors' layout under the case's public seed and the core decrypts the parent's staged
inputs into them (docs/security.md, "Drawn and staged inputs"). Either way custom_kernel has no answer
for the real inputs, returns the one it has (or zeros) and fails the check. In benchmark mode, whose
seeds are public, the hole stays open (the worker draws the real inputs; no staging can close it there).
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
    answer = answers.pop(id(data), None)  # a cheat's all: it never computes in the timed call
    return answer if answer is not None else torch.zeros_like(data[-1])
