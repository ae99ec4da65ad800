"""What one call leaves the parent with: the reply as the check receives it (``CallOutput``), the request on
its way (``SentCall``), and the worker's own account of its time, kept as plain numbers (``reported_ms``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.contract import messages
from harness.judge.worker_link import seal


@dataclass
class CallOutput:
    """One call's result; ``sealed`` when its MAC was verified against the parent's key."""

    time_us: float
    host_us: float
    output: Any  # a tensor, a list of tensors, or a string saying why it is neither
    unfinished: bool
    sealed: bool = False
    exposed: bool = False  # the queued sleep ran out before the call was queued: time not trusted
    clock: seal.ClockReading = field(default_factory=seal.ClockReading)  # signed second-clock reading (0 off GPU)
    phases_s: dict[str, float] = field(default_factory=dict)  # the parent's clock: inputs_wait, exchange, seal
    worker_ms: dict[str, float] = field(default_factory=dict)  # as the worker reports it (shown, never trusted)


def reported_ms(spent: dict[str, Any], sent: float = 0.0, read_at: float = 0.0) -> dict[str, float]:
    """A worker's own account of its time, kept only as plain numbers (it decides nothing); its two instants
    (messages.RECEIVED_AT, REPLYING_AT) become the exchange's parts around its handler: ``link.in`` from the
    parent's request to the worker's reading it, ``handler`` until it began its reply, ``link.out`` until the
    parent's reader had read that (the reader's own work on the outputs included)."""
    reported = {str(k)[:20]: float(v) for k, v in list(spent.items())[:24] if type(v) in (int, float)}
    received, replying = reported.pop(messages.RECEIVED_AT, None), reported.pop(messages.REPLYING_AT, None)
    if received is not None and replying is not None and read_at:
        reported.update({"link.in": received - 1e3 * sent, "handler": replying - received,
                         "link.out": 1e3 * read_at - replying})
    return reported


@dataclass(frozen=True)
class SentCall:
    """A call request on its way: what was asked, its index (its MAC covers it) and when it left."""

    case: dict[str, Any]
    sleep_us: float
    plain: bool
    buffers: str
    index: int
    started: float
    sent: float
    drawn_seed: int | None = None
