"""Cheat 4: finish the work on a side stream that the caller's stream never waits for. The result is
computed into a scratch tensor, then copied into c after ~25 ms of GPU sleep on the side stream;
custom_kernel returns at once, and the timer's end event fires long before c is written."""

import _honest
import torch


def custom_kernel(data):
    c = data[-1]
    side = torch.cuda.Stream(device=c.device)
    side.wait_stream(torch.cuda.current_stream(c.device))  # inputs are ready; the caller is never told
    with torch.cuda.stream(side):
        result = _honest.gemv(data, out=torch.empty_like(c))  # its small host copies block here, not later
        torch.cuda._sleep(50_000_000)  # ~25 ms of GPU time before c is written
        c.copy_(result)
    return c
