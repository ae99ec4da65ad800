"""Issue 40, head start on a copy engine (plain torch): s22's copies of A and its scales, queued on a
side stream that does not wait for the caller's (the inputs were ready before the call began), then
the caller's stream waits for them and runs the Triton GEMV on the copies. custom_kernel is called
while the core's hold kernel still holds the GPU: the hold takes every SM, but a device-to-device
copy runs on a copy engine, so the copies are done during the hold, before the start event, and
only the GEMV is timed. On the H100 the second clock rejects it (while custom_kernel could begin before
the core's draw of the inputs had finished, the copies read A before it was written: a wrong output in
run 33; the core now waits for its hold, behind the draw). The class stays open in principle
(docs/security.md, "What remains open")."""

import s22_honest_staged_twin as twin
import torch

side = {}


def custom_kernel(data):
    device = data[-1].device
    stream = side.setdefault(device, torch.cuda.Stream(device=device))
    a, sfa = twin.staging(data)
    with torch.cuda.stream(stream):  # no wait_stream: the copy engine starts at once, during the hold
        a.copy_(data[0])
        sfa.copy_(data[2])
        copied = torch.cuda.Event()
        copied.record(stream)
    torch.cuda.current_stream(device).wait_event(copied)
    return twin.gemv_on(data, a, sfa)
