"""The sleep queued ahead of each timed call, decided by the parent and lengthened when a call is exposed.

The worker's timer queues a sleep kernel before the start event so that the host's launch of the
submission happens while the GPU is still busy (docs/timing.md). How long that sleep is, and
whether an exposed call's time counts, is the parent's decision: nothing here runs in the worker.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MIN_QUEUED_SLEEP_US = 20.0
MAX_QUEUED_SLEEP_US = 50_000.0
EXPOSED_RETRIES = 8
"""Timed calls a case may discard as exposed before it accepts them (a call that waits for the
GPU inside custom_kernel is exposed at any sleep: its time then includes that wait, as it should)."""


@dataclass
class QueuedSleep:
    """The sleep queued ahead of each timed call: twice the host's launch time as the case has shown
    it, raised when a call comes back exposed. With the compiled core it is the hold's ceiling: the
    hold ends once the core has queued the whole call (docs/timing.md), so the sleep's length costs
    wall time only where a call meets it; the Python timer (no core) sleeps it whole, and the
    lowering below is what saves its wall time.

    A call is exposed when the GPU reached the start event before the host had queued all of it
    (the compiled core checks the event right after custom_kernel returns): host launch time may
    then lie between the events. Such a time is discarded and the sleep raised above twice the
    call's host time, up to ``EXPOSED_RETRIES`` times a case. Past that the calls are exposed at
    any sleep (they wait for the GPU inside custom_kernel): their times count, and the sleep goes
    back to its first length, since a longer one would only cost wall time.

    Every call's host time (the warm-up's included) is kept, and a sleep more than ``SLACK`` times
    what nine launches in ten need (twice their ``HOST_QUANTILE``, plus the floor) comes down to
    ``SLACK`` times that: one slow launch (a collection, a page fault, a warm-up that allocated) no
    longer sets the sleep of every call after it (an H100 case slept 6.7 ms ahead of each of its 100
    calls of 29 us after one slow warm-up, docs/results.md run 18), while a launch that is slow one
    call in ten or more keeps it long. Lowered all the way to the need, the sleeps left 11 calls
    exposed (discarded) across 14 shapes against 3 before (run 18 call 13); with the slack, 1 (call
    14): the slack keeps the sleeps a case starts with unless they are far off.
    """

    us: float
    exposed: int = 0
    first_us: float = field(init=False)
    host_us: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.first_us = self.us

    @classmethod
    def after_warmup(cls, host_us: list[float]) -> QueuedSleep:
        """Twice the slowest warm-up launch (the first call's JIT excluded) plus the floor."""
        return cls(_sleep_for(max(host_us)), host_us=list(host_us))

    def counts(self, host_us: float, exposed: bool) -> bool:
        """Whether a call's time counts; an exposed one lengthens the sleep (and does not count)."""
        self.host_us.append(host_us)
        if not exposed:
            self.us = min(self.us, SLACK * _sleep_for(quantile(self.host_us, HOST_QUANTILE)))
            return True
        self.exposed += 1
        if self.exposed > EXPOSED_RETRIES:
            self.us = self.first_us
            return True
        self.us = min(MAX_QUEUED_SLEEP_US, max(2 * self.us, _sleep_for(host_us)))
        return False

    def summary(self) -> str:
        """What the exposed calls did to the case, for its reason line."""
        text = f"{self.exposed} call(s) exposed (the host's launch outran the queued sleep)"
        if self.exposed <= EXPOSED_RETRIES:
            return f"{text}, sleep raised to {self.us:.0f} us"
        return f"{text}; exposed at any sleep (custom_kernel waits for the GPU), counted after {EXPOSED_RETRIES}"


HOST_QUANTILE = 0.9
"""The share of a case's host launch times the sleep must cover: nine in ten."""
SLACK = 2.0
"""How many times what the launches need a sleep may be before it comes down (to that many times)."""


def quantile(values: list[float], share: float) -> float:
    """The nearest-rank ``share`` quantile: with fewer than 1 / (1 - share) values, the largest."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _sleep_for(host_us: float) -> float:
    """Twice ``host_us`` plus the floor, within the limits."""
    return min(MAX_QUEUED_SLEEP_US, max(MIN_QUEUED_SLEEP_US, 2 * host_us + MIN_QUEUED_SLEEP_US))
