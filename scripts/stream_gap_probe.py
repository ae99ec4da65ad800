"""Where the harness's second-launch cost comes from (issue 38): the ladder's kernel once and twice per
call, timed by CUDA events behind a queued sleep on four kinds of stream.

The harness times a call on torch's current stream, the legacy default stream; the stream replay
(harness.sol.replay_clock, ``stream=True``) on a stream of torch's pool, which is non-blocking. Run 17
read a second launch at +0.9 to +1.7 us by the harness and -0.1 to -0.5 us by the stream replay: if
the legacy stream's implicit synchronisation with blocking streams is the difference, the legacy rows
here read about +1 us (more with a blocking stream in the process) and the others about 0.

    python3 scripts/stream_gap_probe.py OUT.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "submissions" / "timing_ladder"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "problems" / "timing_ladder"))

RUNGS = (10, 203, 548, 1239, 3312)
N = 270336
SAMPLES = 200
SLEEP_CYCLES = 400_000  # about 0.2 ms at 1.98 GHz: the host queues the call while the GPU sleeps


def blocking_stream() -> torch.cuda.ExternalStream:
    """A stream made with flags 0 (blocking: the legacy default stream waits for it and it for that)."""
    handle = ctypes.c_void_p()
    if ctypes.CDLL("libcuda.so.1").cuStreamCreate(ctypes.byref(handle), 0) != 0:
        raise RuntimeError("cuStreamCreate failed")
    return torch.cuda.ExternalStream(handle.value)


def event_us(launch, stream: torch.cuda.Stream) -> float:
    """Median event time (us) of ``launch()`` on ``stream``, behind a queued sleep."""
    times = []
    with torch.cuda.stream(stream):
        for _ in range(SAMPLES):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(SLEEP_CYCLES)
            start.record()
            launch()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    out = parser.parse_args().out
    from triton_ladder import custom_kernel

    x = torch.rand(N, device="cuda")
    y = torch.empty_like(x)
    # In this order: the last kind finds the blocking stream the third made still alive.
    kinds = {"legacy default": torch.cuda.default_stream, "pool (non-blocking)": torch.cuda.Stream,
             "blocking": blocking_stream, "legacy default, a blocking stream alive": torch.cuda.default_stream}
    rows = []
    for kind, make in kinds.items():
        stream = make()
        for iters in RUNGS:
            data = (x, y, iters)
            custom_kernel(data)
            torch.cuda.synchronize()
            once = event_us(lambda data=data: custom_kernel(data), stream)
            twice = event_us(lambda data=data: (custom_kernel(data), custom_kernel(data)), stream)
            rows.append({"stream": kind, "iters": iters, "once_us": round(once, 3), "twice_us": round(twice, 3),
                         "second_launch_us": round(twice - 2 * once, 3)})
            print(json.dumps(rows[-1]), flush=True)
    for kind in kinds:
        extra = [row["second_launch_us"] for row in rows if row["stream"] == kind]
        middle = statistics.median(extra)
        print(f"{kind}: second launch {min(extra):+.2f} to {max(extra):+.2f} us (median {middle:+.2f})")
    out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
