"""What a harness process keeps for its life, kept out of the garbage collector's way.

Python's full collection scans every object it tracks. A process's imports make about 200,000 that live
as long as it does (torch's, the harness's), and the collections they set off find next to nothing:
CPU runs of the GEMV made three full collections in their parent's imports, 25-289 ms each, freeing 0 to
70 objects, and one of 468 ms during the cases (2026-11-27, a laptop core). One inside a case's timed
loop lengthens that case's harness time per call (about 1 ms a call over a hundred calls).

- The parent, trusted, freezes once, before its first evaluation's cases, what its imports and setup
  made (``freeze_once``: ``gc.freeze``, the permanent generation no collection scans). A later
  evaluation's objects stay collectable, so a long-lived parent (a leaderboard, the service) frees them.
- A worker freezes nothing: what its collector lists is what a submission walking it would find (the
  adversarial rows s01 and s10 walk it to reach the harness's state). It keeps collection off while it imports
  (``hold``, harness/worker/boot.py), where each young collection would scan the imports again, and
  then makes one full collection over them (``release``): they are old from then on, and the next full
  collection waits until a quarter as many again have been made.

``CollectorClock`` measures the collector's own time over a span (a case's timed loop: the report's
``collector`` per call), so that a run shows whether a collection fell inside it.
"""

from __future__ import annotations

import gc
import time
from typing import Any

FROZEN_ONCE: list[bool] = [False]


def freeze_once() -> None:
    """The parent's: freeze what is alive the first time (its imports and setup); later calls do nothing."""
    if not FROZEN_ONCE[0]:
        gc.freeze()
        FROZEN_ONCE[0] = True


def hold() -> None:
    """A worker's, while it imports: no collection until ``release``."""
    gc.disable()


def release() -> None:
    """A worker's, once its imports are done: one full collection over them, then collection on."""
    gc.collect()
    gc.enable()


class CollectorClock:
    """The milliseconds the collector ran, any generation and thread, while the span is open (``ms``)."""

    def __init__(self) -> None:
        self.ms = 0.0
        self._began = 0.0

    def _tick(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.ms += 1e3 * (time.perf_counter() - self._began)

    def __enter__(self) -> CollectorClock:
        gc.callbacks.append(self._tick)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._tick)
