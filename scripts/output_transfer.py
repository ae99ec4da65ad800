"""Where a large output's time goes between the worker's compiled core and the parent's MAC check:
the result channel against the parent's output file, and SHA-256 on both sides (issues 24 and 33).

For each output size a child process plays the worker: the compiled core (on the GPU when --device
cuda) times a custom_kernel that returns one ready bf16 tensor, copies and digests it, and the child
sends the signed reply as the worker does, through the result channel or (its outputs copied into the parent's
output file) with the file's places only. The parent asks for each call, receives it and checks its
MAC as WorkerSession does. Per call, medians in ms: `core` (the child's time_call: copies, digest,
the file copy), `exchange` (request sent to reply read, the parent's read of the file included, less
the core), `seal` (the parent's MAC check). Then the digest speeds: hashlib and the core's SHA-256
on one thread, the parent's host leaves (4 KiB) of one large output and of eight small ones, and the parent's
read of the file into fresh memory against a buffer already touched.

    python3 scripts/output_transfer.py [--device cuda] [--sizes 65536,1048576,...] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.contract import leaf_hash, messages, protocol  # noqa: E402 (this checkout's harness, not an installed one)
from harness.contract.output_file import FILE_KEY  # noqa: E402
from harness.judge.worker_link import channel_sockets, output_reader, seal, worker_spawn  # noqa: E402

SIZES = (64 << 10, 1 << 20, 8 << 20, 15 << 20, 4096 * 24576 * 2)
"""The threshold, the GEMM's 1.75 MiB class, the grouped GEMM's 8 MiB and 15 MB, the fp8 blockwise GEMM's 200 MB."""
REPEATS = 15


def child(key_fd: int, commands: int, results: int, file_fd: int | None, size: int, device: str) -> None:
    """The worker's side: the core times a kernel that returns one ready tensor of ``size`` bytes."""
    from harness.worker import sealed_core

    timer = sealed_core.SealedTimer(key_fd, torch.device(device))
    if file_fd is not None:
        timer.map_outputs(file_fd)
    out = torch.randn(size // 2, device=device).to(torch.bfloat16)
    timer.bind(lambda _: types.SimpleNamespace(custom_kernel=lambda data: out), "transfer")
    protocol.send_message(results, messages.Ready(import_s=0.0, timer=timer.method, persisting_l2_reset=False,
                                                  sealed=True, overhead_us=timer.overhead_us, sandbox={}))
    index = 0
    while os.read(commands, 1):
        started = time.perf_counter()
        _, time_us, host_us, unfinished, exposed, structure, views, mac, _, clock = timer.time_call(None, index, 0, 0.0)
        core_ms = 1e3 * (time.perf_counter() - started)
        parts = [protocol.storage_part(str(d), s, st, o, p) for d, s, st, o, p in views]
        protocol.send_message(results, messages.Output(time_us=time_us, host_us=host_us, structure=structure,
                                                       unfinished=unfinished, exposed=exposed, mac=mac,
                                                       event_us=clock[0], clock_us=clock[1], clock_gap_us=clock[2],
                                                       clock_allowance_us=clock[3], spent_ms={"core": core_ms}),
                              parts=parts)
        index += 1


def exchange(size: int, through_file: bool, device: str, repeats: int) -> dict[str, float]:
    """Median ms per call of the core, the exchange and the seal, as the parent sees them."""
    key, key_r = worker_spawn.new_key_pipe()
    commands_w, commands_r = channel_sockets.channel(parent_sends=True)
    results_r, results_w = channel_sockets.channel(parent_sends=False)
    file_fd = worker_spawn.new_output_file() if through_file else None
    passed = [key_r, commands_r, results_w] + ([file_fd] if file_fd is not None else [])
    command = [sys.executable, __file__, "--child", str(key_r), str(commands_r), str(results_w),
               str(file_fd) if file_fd is not None else "-", str(size), device]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen(command, pass_fds=passed, env=env)
    for fd in (key_r, commands_r, results_w):
        os.close(fd)
    fetch = None if file_fd is None else {FILE_KEY: functools.partial(output_reader.read, file_fd)}
    ready = protocol.receive_message(results_r, messages.REPLIES).message
    spent: dict[str, list[float]] = {"core": [], "exchange": [], "seal": []}
    for index in range(repeats):
        started = time.perf_counter()
        os.write(commands_w, b"x")
        received = protocol.receive_message(results_r, messages.REPLIES, fetch)
        answered = time.perf_counter()
        seal.verify_call(key, index, 0, ready.overhead_us, received.message, received.entries, received.tensors)
        core_ms = received.message.spent_ms["core"]
        spent["core"].append(core_ms)
        spent["exchange"].append(1e3 * (answered - started) - core_ms)
        spent["seal"].append(1e3 * (time.perf_counter() - answered))
    os.close(commands_w)
    worker.wait()
    os.close(results_r)
    if file_fd is not None:
        os.close(file_fd)
    medians = {name: round(statistics.median(values), 3) for name, values in spent.items()}
    return {**medians, "total": round(sum(medians.values()), 3)}


def best_s(action, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def digest_speeds() -> dict[str, object]:
    """GB/s of one thread of hashlib and of the core's SHA-256; ms of the parent's host leaves."""
    from harness.worker import _sealed

    data = os.urandom(64 << 20)
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    large = [memoryview(data)]
    small = [memoryview(data)[at:at + (1 << 20)] for at in range(0, 8 << 20, 1 << 20)]
    serial = functools.partial(lambda outputs: [hashlib.sha256(o).digest() for o in outputs])
    return {
        "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "sha_ni_flag": " sha_ni" in flags,
        "hashlib_gb_s": round(len(data) / best_s(lambda: hashlib.sha256(data).digest()) / 1e9, 2),
        "core_backend": _sealed.sha256_backend(),
        "core_gb_s": round(len(data) / best_s(lambda: _sealed.hmac_sha256(bytes(32), data)) / 1e9, 2),
        "leaves_64mib_ms": round(1e3 * best_s(lambda: [leaf_hash.cpu_leaves(o) for o in large]), 2),
        "serial_64mib_ms": round(1e3 * best_s(lambda: serial(large)), 2),
        "leaves_eight_1mib_ms": round(1e3 * best_s(lambda: [leaf_hash.cpu_leaves(o) for o in small]), 2),
        "serial_eight_1mib_ms": round(1e3 * best_s(lambda: serial(small)), 2),
    }


def read_costs(size: int) -> dict[str, float]:
    """ms to read ``size`` bytes of the output file into fresh memory (as the parent does) and into a
    buffer already touched (what a reused buffer would cost)."""
    fd = worker_spawn.new_output_file()
    os.pwrite(fd, os.urandom(1 << 20) * (size >> 20) + os.urandom(size % (1 << 20)), 0)
    reused = torch.empty(size, dtype=torch.uint8)
    view = memoryview(reused.numpy())
    reused_ms = 1e3 * best_s(lambda: list(output_reader._readers().map(
        lambda at: output_reader._read_piece(fd, view[at:at + output_reader.PIECE_BYTES], at),
        range(0, size, output_reader.PIECE_BYTES))))
    fresh_ms = 1e3 * best_s(lambda: output_reader.read(fd, 0, size))
    os.close(fd)
    return {"fresh_ms": round(fresh_ms, 2), "reused_ms": round(reused_ms, 2)}


def main() -> int:
    if sys.argv[1:2] == ["--child"]:
        key_fd, commands, results, file_fd, size, device = sys.argv[2:8]
        child(int(key_fd), int(commands), int(results), None if file_fd == "-" else int(file_fd), int(size), device)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="output sizes in bytes, comma-separated")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--out", help="also write the figures here as JSON")
    args = parser.parse_args()
    if worker_spawn.new_output_file() is None:
        print("no memfd here: outputs can only cross the result channel")
        return 1
    found: dict[str, object] = {"device": args.device, "digest": digest_speeds(), "sizes": {}}
    print(json.dumps(found["digest"]))
    print(f"{'bytes':>11} {'path':>7} {'core ms':>8} {'exchange':>9} {'seal ms':>8} {'total':>8} "
          f"{'read fresh':>11} {'reused':>7}")
    for size in (int(s) for s in args.sizes.split(",")):
        reads = read_costs(size)
        rows = {path: exchange(size, path == "file", args.device, args.repeats) for path in ("channel", "file")}
        found["sizes"][str(size)] = {**rows, "read": reads}
        for path, row in rows.items():
            extra = f"{reads['fresh_ms']:>11} {reads['reused_ms']:>7}" if path == "file" else ""
            print(f"{size:>11} {path:>7} {row['core']:>8} {row['exchange']:>9} {row['seal']:>8} {row['total']:>8} "
                  f"{extra}")
    if args.out:
        Path(args.out).write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
