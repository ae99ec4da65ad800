"""The leaves of the outputs the parent received (harness/contract/leaf_hash.py): on the GPU that
checks them, by the leaf kernel, or by hashlib where they are on the host (one thread: on 4 KiB leaves
a pool of eight read half as fast, 34 ms against 18 for 15 MB on the H100's host, docs/results.md run 22).

The digest the MAC covers is made of these leaves (harness.judge.worker_link.seal.output_digest). On a
GPU the worker's core hashed its copy there; the parent hashes the copy it will check, on its own GPU,
so that a 200 MB output costs 0.38 ms of kernel (about 1 ms with its leaves copied back) where the
host's SHA-256 took 25-31 ms (docs/results.md run 22, calls 2 and 5: the Triton fp8 GEMM's largest output).
"""

from __future__ import annotations

import functools
import itertools

import torch

from harness.contract import leaf_hash
from harness.contract.ptx_module import PtxModule
from harness.contract.tensor_tree import storage_bytes


@functools.cache
def _kernel(device_index: int) -> PtxModule:
    with torch.cuda.device(device_index):
        return PtxModule(leaf_hash.ptx())


def _device_leaves(storages: list[torch.Tensor]) -> list[bytes]:
    """Each output's leaves, one after another, by one launch of the leaf kernel on torch's current stream
    of their GPU, and one copy of every leaf back."""
    device = storages[0].device
    storages = [raw if raw.data_ptr() % 16 == 0 else raw.clone() for raw in storages]  # it reads 16-byte words
    words, total = leaf_hash.table([(raw.data_ptr(), raw.numel()) for raw in storages])
    out = torch.empty(32 * max(1, total), dtype=torch.uint8, device=device)
    if total:
        entries = torch.tensor(words, dtype=torch.uint64).to(device)
        blocks = -(-total // leaf_hash.THREADS_PER_BLOCK)
        arguments = [entries.data_ptr(), len(storages), out.data_ptr()]
        with torch.cuda.device(device):
            _kernel(device.index or 0).launch(leaf_hash.KERNEL_NAME, arguments, blocks, leaf_hash.THREADS_PER_BLOCK)
    flat = out.cpu().numpy().tobytes()
    bounds = [*words[2::leaf_hash.TABLE_ENTRY_WORDS], total]
    return [flat[32 * first:32 * last] for first, last in itertools.pairwise(bounds)]


def leaves(tensors: list[torch.Tensor]) -> list[bytes]:
    """Each tensor's leaves over its whole storage, one after another (empty for an empty one): on their
    GPU where they are all on one, else on the host."""
    storages = [storage_bytes(tensor) for tensor in tensors]
    devices = {raw.device for raw in storages}
    if len(devices) == 1 and next(iter(devices)).type == "cuda":
        return _device_leaves(storages)
    return [b"".join(leaf_hash.cpu_leaves(memoryview(raw.cpu().numpy()))) for raw in storages]
