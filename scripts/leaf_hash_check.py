"""The outputs' leaf kernel on a GPU (harness/contract/leaf_hash.py) against hashlib, and its speed.

Every length that matters to SHA-256's padding and the 4 KiB leaf boundary, random bytes, several
outputs in one launch list and an unaligned storage (which the parent's hasher copies first); then the
ms per call of the kernel's leaves against hashlib's (one thread and the parent's pool) at the
contest's output sizes (GEMM 1.75 MiB, the grouped GEMM's eight outputs of 8 MiB in all, the fp8 GEMM's
200 MB), all of a call's outputs in one launch. The step fails on any
leaf that differs. ``kernel_ms``: the launch alone, synchronized; ``with_copy_back_ms``: the parent's
whole call (launch, leaves copied back, split per output).

    python3 scripts/leaf_hash_check.py OUT.json
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.contract import leaf_hash
from harness.judge.worker_link import output_leaves

LENGTHS = [0, 1, 55, 56, 63, 64, 65, 119, 120, 4095, 4096, 4097, 3 * 4096 - 7, 1 << 20, (1 << 20) + 13]
GROUPED_ROWS = (80, 176, 128, 72, 64, 248, 96, 160)  # the grouped GEMM's first benchmark shape, n = 4096
SIZES = {"gemm_1.75MiB": [7168 * 128 * 2], "grouped_eight_8MiB": [m * 4096 * 2 for m in GROUPED_ROWS],
         "fp8_200MB": [4096 * 24576 * 2]}


def _best_ms(action, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        started = time.perf_counter()
        action()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    return round(1e3 * best, 3)


def main() -> int:
    out = Path(sys.argv[1])
    blobs = [os.urandom(n) for n in LENGTHS]
    on_gpu = [torch.frombuffer(bytearray(b), dtype=torch.uint8).cuda() if b else torch.empty(0, dtype=torch.uint8,
              device="cuda") for b in blobs]
    expected = [b"".join(leaf_hash.cpu_leaves(memoryview(b))) for b in blobs]
    got = output_leaves.leaves(on_gpu)  # one launch list, every length at once
    mismatched = [n for n, g, e in zip(LENGTHS, got, expected) if g != e]
    unaligned_source = torch.frombuffer(bytearray(os.urandom(10_001)), dtype=torch.uint8).cuda()
    unaligned = unaligned_source[3:]
    unaligned_ok = output_leaves._device_leaves([unaligned])() == [b"".join(leaf_hash.cpu_leaves(
        memoryview(unaligned.cpu().numpy().tobytes())))]
    speeds = {}
    for name, sizes in SIZES.items():
        data = [torch.randint(0, 256, (size,), dtype=torch.uint8, device="cuda") for size in sizes]
        hosts = [memoryview(d.cpu().numpy()) for d in data]
        assert output_leaves._device_leaves(data)() == [b"".join(leaf_hash.cpu_leaves(h)) for h in hosts], name
        words, total = leaf_hash.table([(d.data_ptr(), d.numel()) for d in data])
        table = torch.tensor(words, dtype=torch.uint64, device="cuda")
        leaves_out = torch.empty(32 * total, dtype=torch.uint8, device="cuda")
        kernel = output_leaves._kernel(torch.cuda.current_device())
        launch = functools.partial(kernel.launch, leaf_hash.KERNEL_NAME, [table.data_ptr(), len(data),
                                   leaves_out.data_ptr()], -(-total // leaf_hash.THREADS_PER_BLOCK),
                                   leaf_hash.THREADS_PER_BLOCK)
        speeds[name] = {"kernel_ms": _best_ms(launch),
                        "with_copy_back_ms": _best_ms(lambda d=data: output_leaves._device_leaves(d)()),
                        "host_one_thread_ms": _best_ms(lambda h=hosts: [leaf_hash.cpu_leaves(x) for x in h], 2)}
    result = {"device": torch.cuda.get_device_name(), "lengths": LENGTHS, "mismatched_lengths": mismatched,
              "unaligned_ok": unaligned_ok, "speeds": speeds}
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0 if not mismatched and unaligned_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
