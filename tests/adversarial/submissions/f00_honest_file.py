"""The honest twin of the output-file rows (f01-f03, issue 33): the torch GEMM, whose 64 KiB output
(the CPU shape) or larger goes through the parent's output file, not the result pipe. It must pass;
it raises if the worker was given no such file (then the rows below would test nothing)."""

import _honest
import _reach

if _reach.worker().outputs_fd is None:
    raise RuntimeError("the worker has no output file: outputs cross the pipe")


def custom_kernel(data):
    return _honest.gemm(data)
