"""A PTX text loaded through the CUDA driver into torch's context, for the parent's own small kernels
(the replay clock's stamps, harness/sol/globaltimer.py; the outputs' digest leaves,
harness/judge/worker_link/output_leaves.py).

ctypes to libcuda, which torch has already initialised: nothing to compile on the host, no toolkit,
and nothing of the worker's compiled core is used. Kernels take u64 parameters, or byte arrays
(a probe's large parameter blocks, scripts/cluster_launch_probe.py).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import torch

from harness.contract.libcuda import check, driver


class PtxModule:
    """The module of ``ptx`` in the current device's (torch's primary) context; ``launch`` queues one of
    its kernels on torch's current stream."""

    def __init__(self, ptx: str) -> None:
        torch.cuda.init()
        torch.cuda.synchronize()  # the runtime has made torch's (primary) context current on this thread
        self._cuda = driver()
        self._cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self._module = ctypes.c_void_p()
        check(self._cuda.cuModuleLoadData(ctypes.byref(self._module), ctypes.c_char_p(ptx.encode())),
              "cuModuleLoadData")
        self._functions: dict[str, ctypes.c_void_p] = {}

    def function(self, name: str) -> ctypes.c_void_p:
        """The CUfunction of ``name`` (a graph built by hand adds it as a kernel node: scripts/kernel_replay.py)."""
        if name not in self._functions:
            function = ctypes.c_void_p()
            check(self._cuda.cuModuleGetFunction(ctypes.byref(function), self._module, name.encode()),
                  f"cuModuleGetFunction of {name}")
            self._functions[name] = function
        return self._functions[name]

    def launch(self, name: str, arguments: Sequence[int | bytes] = (), blocks: int = 1, threads: int = 1) -> None:
        """Queue ``name`` with these arguments, u64 or (bytes) a byte-array parameter's contents (the driver
        copies them at the launch)."""
        values = [ctypes.create_string_buffer(value, len(value)) if isinstance(value, bytes) else ctypes.c_uint64(value)
                  for value in arguments]
        params = (ctypes.c_void_p * max(1, len(values)))(
            *[ctypes.cast(ctypes.pointer(value), ctypes.c_void_p) for value in values])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(self._cuda.cuLaunchKernel(self.function(name), blocks, 1, 1, threads, 1, 1, 0, stream,
                                        params if values else None, None), f"cuLaunchKernel of {name}")
