"""The leaves of the outputs the parent received (harness/contract/leaf_hash.py): on the GPU that
checks them, by the leaf kernel, or by hashlib where they are on the host (one thread: on 4 KiB leaves
a pool of eight read half as fast, 34 ms against 18 for 15 MB on the H100's host, docs/results.md run 22).

The digest the MAC covers is made of these leaves (harness.judge.worker_link.seal.output_digest). On a
GPU the worker's core hashed its copy there; the parent hashes the copy it will check, on its own GPU,
so that a 200 MB output costs 0.31 ms of kernel (0.64 ms with its leaves copied back, run 33 call 8) where the
host's SHA-256 took 25-31 ms (docs/results.md run 22, calls 2 and 5: the Triton fp8 GEMM's largest output).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import torch

from harness.contract import leaf_hash
from harness.contract.ptx_module import PtxModule
from harness.contract.tensor_tree import storage_bytes


@functools.cache
def _kernel(device_index: int) -> PtxModule:
    with torch.cuda.device(device_index):
        return PtxModule(leaf_hash.ptx())


def _device_leaves(storages: list[torch.Tensor]) -> Callable[[], list[bytes]]:
    """Each output's leaves, one after another, by one launch of the leaf kernel on torch's current stream
    of their GPU, and one copy of every leaf back into pinned memory, both queued; the function returned
    waits for them (so that the parent's own GPU work can be queued meanwhile: WorkerSession.call)."""
    device = storages[0].device
    storages = [raw if raw.data_ptr() % 16 == 0 else raw.clone() for raw in storages]  # it reads 16-byte words
    words, total = leaf_hash.table([(raw.data_ptr(), raw.numel()) for raw in storages])
    out = torch.empty(32 * max(1, total), dtype=torch.uint8, device=device)
    back = torch.empty(out.numel(), dtype=torch.uint8, pin_memory=True)
    done = torch.cuda.Event()
    with torch.cuda.device(device):
        if total:
            entries = torch.tensor(words, dtype=torch.uint64).pin_memory().to(device, non_blocking=True)
            blocks = -(-total // leaf_hash.THREADS_PER_BLOCK)
            arguments = [entries.data_ptr(), len(storages), out.data_ptr()]
            _kernel(device.index or 0).launch(leaf_hash.KERNEL_NAME, arguments, blocks, leaf_hash.THREADS_PER_BLOCK)
        back.copy_(out, non_blocking=True)
        done.record()
    bounds = [*words[2::leaf_hash.TABLE_ENTRY_WORDS], total]

    def wait() -> list[bytes]:
        done.synchronize()
        flat = back.numpy().tobytes()
        return [flat[32 * first:32 * last] for first, last in itertools.pairwise(bounds)]
    return wait


def start_leaves(tensors: list[torch.Tensor]) -> Callable[[], list[bytes]]:
    """Each tensor's leaves over its whole storage, one after another (empty for an empty one), returned by
    the function this returns: on their GPU where they are all on one (queued now, waited for by that
    function), else on the host (computed now)."""
    storages = [storage_bytes(tensor) for tensor in tensors]
    devices = {raw.device for raw in storages}
    if len(devices) == 1 and next(iter(devices)).type == "cuda":
        return _device_leaves(storages)
    leaves = [b"".join(leaf_hash.cpu_leaves(memoryview(raw.cpu().numpy()))) for raw in storages]
    return lambda: leaves


def leaves(tensors: list[torch.Tensor]) -> list[bytes]:
    """``start_leaves``'s leaves, waited for."""
    return start_leaves(tensors)()
