"""The sleep queued ahead of each timed call, decided by the parent and lengthened when a call is exposed.

The worker's timer queues a sleep kernel before the start event so that the host's launch of the
submission happens while the GPU is still busy (docs/timing.md). How long that sleep is, and
whether an exposed call's time counts, is the parent's decision: nothing here runs in the worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIN_QUEUED_SLEEP_US = 20.0
MAX_QUEUED_SLEEP_US = 50_000.0
EXPOSED_RETRIES = 8
"""Timed calls a case may discard as exposed before it accepts them (a call that waits for the
GPU inside custom_kernel is exposed at any sleep: its time then includes that wait, as it should)."""


@dataclass
class QueuedSleep:
    """The sleep queued ahead of each timed call, lengthened whenever a call comes back exposed.

    A call is exposed when the GPU reached the start event before the host had queued all of it
    (the compiled core checks the event right after custom_kernel returns): host launch time may
    then lie between the events. Such a time is discarded and the sleep raised above twice the
    call's host time, up to ``EXPOSED_RETRIES`` times a case. Past that the calls are exposed at
    any sleep (they wait for the GPU inside custom_kernel): their times count, and the sleep goes
    back to its first length, since a longer one would only cost wall time.
    """

    us: float
    exposed: int = 0
    first_us: float = field(init=False)

    def __post_init__(self) -> None:
        self.first_us = self.us

    @classmethod
    def after_warmup(cls, host_us: list[float]) -> QueuedSleep:
        """Twice the slowest warm-up launch (the first call's JIT excluded) plus the floor."""
        return cls(min(MAX_QUEUED_SLEEP_US, max(MIN_QUEUED_SLEEP_US, 2 * max(host_us) + MIN_QUEUED_SLEEP_US)))

    def counts(self, host_us: float, exposed: bool) -> bool:
        """Whether a call's time counts; an exposed one lengthens the sleep (and does not count)."""
        if not exposed:
            return True
        self.exposed += 1
        if self.exposed > EXPOSED_RETRIES:
            self.us = self.first_us
            return True
        self.us = min(MAX_QUEUED_SLEEP_US, max(2 * self.us, 2 * host_us + MIN_QUEUED_SLEEP_US))
        return False

    def summary(self) -> str:
        """What the exposed calls did to the case, for its reason line."""
        text = f"{self.exposed} call(s) exposed (the host's launch outran the queued sleep)"
        if self.exposed <= EXPOSED_RETRIES:
            return f"{text}, sleep raised to {self.us:.0f} us"
        return f"{text}; exposed at any sleep (custom_kernel waits for the GPU), counted after {EXPOSED_RETRIES}"


