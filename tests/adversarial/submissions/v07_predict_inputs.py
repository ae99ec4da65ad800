"""Cheat 7: predict the inputs. At import, regenerate every call's inputs from the public seeds of
task.yml (the harness's own seed rule is public) and compute their outputs, untimed; each call
then only looks its answer up. With the organizer's secret, no call matches: garbage."""

import _honest
import torch

from harness.contract.task_spec import load_task
from harness.judge.verdict.seeds import call_seed
from problems.nvfp4_gemv.reference import generate_input

CALLS_PER_CASE = 16
_answers = {}


def _fingerprint(a):
    return bytes(a.view(torch.uint8).flatten()[:64].tolist())


for case in load_task("nvfp4_gemv").cpu_tests:
    for index in range(CALLS_PER_CASE):
        inputs = generate_input(**{**case, "seed": call_seed(case["seed"], index)}, device="cpu")
        _answers[_fingerprint(inputs[0])] = _honest.gemv(inputs).clone()


def custom_kernel(data):
    c = data[-1]
    answer = _answers.get(_fingerprint(data[0].view(torch.uint8).cpu()))
    if answer is not None:
        c.copy_(answer)
    return c  # no prediction matched: still NaN
