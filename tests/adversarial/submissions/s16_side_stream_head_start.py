"""Issue 40, head start (plain torch): half of the call's work on a side stream that does not wait for
the caller's stream, so that it runs while the core's queued sleep still holds the caller's stream,
before the start event; the other half on the caller's stream, which then waits for the side one.
The core's hold kernel takes every thread slot of every SM until the start event, and the core calls
custom_kernel only once every block of the hold is resident: the side half cannot start before it, and
is timed (passes at its twin's time). Before that wait, the side half could start beside the core's draw
of the inputs, which runs ahead of the hold (0.91x its twin in 3 of 11 runs on the H100, runs 33-34)."""

import _honest
import torch

side = {}


def custom_kernel(data):
    c = data[-1]
    stream = side.setdefault(c.device, torch.cuda.Stream(device=c.device))
    first, second = _honest.halves(data)
    with torch.cuda.stream(stream):  # no wait_stream: the inputs were ready before the call began
        _honest.gemv_rows(data, first)
        done = torch.cuda.Event()
        done.record(stream)
    _honest.gemv_rows(data, second)
    torch.cuda.current_stream(c.device).wait_event(done)
    return c
