"""A call's outputs as the parent's check receives them (judge/worker_link/worker_channel.py: WorkerSession.call)."""

from __future__ import annotations

from pathlib import Path

import torch

from harness.contract.task_spec import load_task
from harness.judge.worker_link.worker_channel import WorkerSession


def test_a_call_hands_the_check_copies_of_its_sealed_outputs_on_the_check_device():
    """Where the check runs on a GPU the session copies each output there while the MAC is checked on
    the host bytes (torch's meta device stands in for the GPU on a CPU machine)."""
    task = load_task("nvfp4_gemv")
    case = {**task.tests[0], "seed": 7}
    with WorkerSession(task, Path("submissions/nvfp4_gemv/torch_reference.py").resolve(), "cpu") as session:
        session.start()
        on_host = session.call(case, 0.0, "a test", 30.0)
        session.check_on = torch.device("meta")
        on_check_device = session.call(case, 0.0, "a test", 30.0)
    assert on_host.output.device.type == "cpu" and on_check_device.output.device.type == "meta"
    assert (on_check_device.output.shape, on_check_device.output.dtype) == (on_host.output.shape, on_host.output.dtype)
