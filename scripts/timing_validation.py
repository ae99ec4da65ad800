"""Checks the harness's CUDA timer against references that need no trust in it (GPU only).

1. A ~4 us elementwise kernel: the timer's median (fresh buffers, L2 flushed, overhead
   subtracted) against the replay clock under the same reading flush (harness.sol.replay_clock,
   the reference clock of docs/timing.md). Goal: within 5%. Shown beside it, not judged: the
   per-call time of 50 calls replayed back to back in one graph with no flush, where each call
   also pays for an earlier call's output written back (docs/timing.md: 3.93 us against 3.21).
2. A large device-to-device copy: the timer's median against bytes moved / the copy bandwidth
   that ``harness.sol.calibration`` measured. Goal: within 2%.

Both checks time through the compiled core (harness.worker._sealed) when it is built, as ranked runs
do: the core is bound to a "kernel" that runs the thunk it is given. Without it, through the
Python CudaTimer.

Usage: python scripts/timing_validation.py OUT.json
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import types

import torch

from harness.judge.verdict import queued_sleep
from harness.judge.verdict.queued_sleep import MIN_QUEUED_SLEEP_US
from harness.judge.worker_link import worker_spawn
from harness.sol.calibration import measure
from harness.sol.replay_clock import ReplayClock, graph_per_call_us
from harness.worker import sealed_core
from harness.worker.timers import CudaTimer

GRAPH_CALLS = 50
REPLAY_INPUTS = 4  # the replay clock's groups: ROUNDS calls on each (harness.sol.replay_clock)
POOL = 64


_call_index = itertools.count()


def sealed_timer() -> sealed_core.SealedTimer:
    """The compiled core with a throwaway key, bound to a kernel that calls the thunk it is given."""
    _, read_fd = worker_spawn.new_key_pipe()  # the key and the staging key, as a worker gets them
    timer = sealed_core.SealedTimer(read_fd, torch.device("cuda"))
    timer.bind(lambda _: types.SimpleNamespace(custom_kernel=lambda thunk: thunk()), None)
    return timer


def timer_median_us(timer: CudaTimer | sealed_core.SealedTimer, kernels: list,
                    calls: int = 200) -> tuple[float, int]:
    """(median time, exposed calls): the core's calls follow the harness's sleep rule (QueuedSleep)."""
    samples: list[float] = []
    sleep = queued_sleep.QueuedSleep(MIN_QUEUED_SLEEP_US)
    for index in range(calls):
        kernel = kernels[index % len(kernels)]
        if isinstance(timer, sealed_core.SealedTimer):
            answer = timer.time_call(kernel, next(_call_index), 0, sleep.us)
            if sleep.counts(answer[2], answer[4]):
                samples.append(answer[1])
        else:
            _, elapsed_us, _ = timer.time_call(kernel, MIN_QUEUED_SLEEP_US)
            samples.append(elapsed_us())
    return statistics.median(samples), sleep.exposed


def small_kernel_check(timer: CudaTimer | sealed_core.SealedTimer) -> dict:
    elements = 768 * 1024  # 3 MiB of fp32 read, 3 MiB written: about 4 us on an H100
    pool = [(torch.randn(elements, device="cuda"), torch.empty(elements, device="cuda")) for _ in range(POOL)]
    kernels = [lambda x=x, y=y: torch.mul(x, 2.0, out=y) for x, y in pool]
    replay_us = ReplayClock().time(lambda data: torch.mul(data[0], 2.0, out=data[1]), pool[:REPLAY_INPUTS]).us
    back_to_back_us = graph_per_call_us(kernels[:GRAPH_CALLS])
    timed_us, exposed = timer_median_us(timer, kernels)
    return {
        "kernel": "fp32 y = 2x, 3 MiB in, 3 MiB out, fresh buffers per call",
        "replay_clock_us": replay_us,
        "graph_back_to_back_us": back_to_back_us,
        "harness_us": timed_us,
        "harness_raw_us": timed_us + timer.overhead_us,
        "overhead_subtracted_us": timer.overhead_us,
        "exposed_calls": exposed,
        "ratio": timed_us / replay_us,
        "goal": "within 5% of the replay clock",
        "ok": abs(timed_us / replay_us - 1) <= 0.05,
    }


def copy_check(timer: CudaTimer | sealed_core.SealedTimer, bandwidth_bytes_per_s: float) -> dict:
    size = 1 << 30
    src, dst = torch.empty(size, dtype=torch.uint8, device="cuda"), torch.empty(size, dtype=torch.uint8, device="cuda")
    src.random_()
    flag = torch.zeros(1, device="cuda")  # the output the core copies back: not the 1 GiB buffer
    timed_us, _ = timer_median_us(timer, [lambda: (dst.copy_(src), flag)[1]], calls=20)
    expected_us = 2 * size / bandwidth_bytes_per_s * 1e6
    return {
        "kernel": "1 GiB device-to-device copy (2 GiB moved)",
        "harness_us": timed_us,
        "bytes_over_measured_bandwidth_us": expected_us,
        "measured_bandwidth_bytes_per_s": bandwidth_bytes_per_s,
        "ratio": timed_us / expected_us,
        "goal": "within 2%",
        "ok": abs(timed_us / expected_us - 1) <= 0.02,
    }


def sleep_sweep(timer: CudaTimer | sealed_core.SealedTimer) -> dict:
    """The small kernel and a call that launches nothing, at several queued sleeps.

    If a time falls as the sleep grows, the sleep ran out before the host launched the call and
    host latency is inside the measurement (the sleep is too short, or it is not where it should be).
    """
    elements = 768 * 1024
    pool = [(torch.randn(elements, device="cuda"), torch.empty(elements, device="cuda")) for _ in range(POOL)]
    kernels = [lambda x=x, y=y: torch.mul(x, 2.0, out=y) for x, y in pool]
    idle = torch.zeros(1, device="cuda")
    rows = {}
    for sleep_us in (20.0, 100.0, 1000.0):
        samples = {"small": [], "nothing": []}
        exposed, host = {"small": 0, "nothing": 0}, {"small": [], "nothing": []}
        for index in range(60):
            for name, kernel in (("small", kernels[index % POOL]), ("nothing", lambda: idle)):
                if isinstance(timer, sealed_core.SealedTimer):
                    answer = timer.time_call(kernel, next(_call_index), 0, sleep_us)
                    samples[name].append(answer[1])
                    exposed[name] += answer[4]
                    host[name].append(answer[2])
                else:
                    _, elapsed_us, _ = timer.time_call(kernel, sleep_us)
                    samples[name].append(elapsed_us())
        rows[f"sleep_{sleep_us:g}_us"] = {**{name: statistics.median(v) for name, v in samples.items()},
                                          **{f"{name}_exposed": count for name, count in exposed.items()},
                                          **{f"{name}_host_us": statistics.median(v) for name, v in host.items() if v}}
    return rows


def main(out_path: str) -> int:
    timer = sealed_timer() if sealed_core.sealed_available() else CudaTimer(torch.device("cuda"))
    ceilings = measure("cuda")
    results = {
        "device": torch.cuda.get_device_name(),
        "timer": timer.method,
        "small_kernel": small_kernel_check(timer),
        "large_copy": copy_check(timer, ceilings["copy_bytes_per_s"]),
        "sleep_sweep": sleep_sweep(timer),
    }
    if isinstance(timer, sealed_core.SealedTimer):  # the Python timer on the same kernels, for comparison
        python_timer = CudaTimer(torch.device("cuda"))
        results["python_timer"] = {"method": python_timer.method, "small_kernel": small_kernel_check(python_timer),
                                   "sleep_sweep": sleep_sweep(python_timer)}
    with open(out_path, "w") as handle:
        json.dump(results, handle, indent=2)
    print(json.dumps({"sleep_sweep": results["sleep_sweep"], "python_timer": results.get("python_timer")}))
    for name in ("small_kernel", "large_copy"):
        row = results[name]
        print(f"{name}: harness {row['harness_us']:.2f} us, ratio {row['ratio']:.3f} ({row['goal']}): "
              f"{'OK' if row['ok'] else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
