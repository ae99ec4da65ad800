"""How long the parent takes to receive one output and check its digest (CPU only, no GPU needed).

A thread writes an OUTPUT_MIB output through a pipe as the worker does; the parent side reads it
with `protocol.receive_message` and recomputes the digest the MAC covers (`seal.output_digest`). Prints
the median and minimum over REPEATS, with the result pipe at the default size and widened as
`harness.judge.worker_link.worker_process` widens it.

    python3 scripts/output_transfer.py [OUTPUT_MIB]
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time

from harness.contract import messages, protocol
from harness.judge.worker_link import seal
from harness.judge.worker_link.worker_spawn import _widen_pipe

REPEATS = 30


def transfer_ms(payload: bytes, widen: bool) -> list[float]:
    entry = protocol.storage_entry("float16", (len(payload) // 2,), (1,), 0, payload)
    output = messages.Output(time_us=0.0, host_us=0.0, structure="tensor", unfinished=False)
    times = []
    for _ in range(REPEATS):
        read_fd, write_fd = os.pipe()
        if widen:
            _widen_pipe(write_fd)

        def write(fd: int = write_fd) -> None:
            protocol.send_message(fd, output, parts=[(entry, payload)])
            os.close(fd)

        writer = threading.Thread(target=write)
        writer.start()
        started = time.perf_counter()
        received = protocol.receive_message(read_fd, messages.REPLIES)
        seal.output_digest(received.entries, received.tensors)
        times.append((time.perf_counter() - started) * 1e3)
        writer.join()
        os.close(read_fd)
    return times


def main() -> int:
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    payload = os.urandom(mib << 20)
    for widen in (False, True):
        times = transfer_ms(payload, widen)
        print(f"{mib} MiB, {'widened' if widen else 'default'} pipe: median {statistics.median(times):.2f} ms, "
              f"min {min(times):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
