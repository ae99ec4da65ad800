"""The worker's first module: confine the process while it has one thread, then import and serve.

Landlock binds the thread that applies it and the threads it starts afterwards, not those already
running, and importing torch (numpy's OpenBLAS among its imports) starts threads that a
submission with native code could take over. So nothing but the sandbox (ctypes and os) and the
collector's switch (gc: harness/contract/long_lived.py) is imported before ``sandbox.in_worker``; the request
loop, torch with it, comes after, while a thread makes the CUDA context (harness/worker/cuda_context.py).
"""

from __future__ import annotations

import time

from harness.contract import long_lived
from harness.worker import cuda_context, sandbox, worker_args


def main(argv: list[str]) -> int:
    entered = time.perf_counter()  # the worker's seconds ahead of Start count from here
    confinement = sandbox.in_worker(worker_args.workdir(), worker_args.steps(argv), worker_args.cache_root(argv))
    long_lived.hold()  # no collection over torch's imports: serve_loop releases it once they are done
    cuda_context.start(worker_args.ahead_device(argv))  # CUDA's context beside torch's import, not after it
    from harness.worker import serve_loop  # torch, and its threads, only now

    return serve_loop.main(argv, confinement, entered)
