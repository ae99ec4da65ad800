"""Every message between the parent and its worker, one typed record each: the only place a kind is spelled.

The parent sends requests and the worker answers each with one reply: start -> ready, prepare ->
prepared, call -> output, profile -> profiled, recheck -> rechecked, or error when the call ended in
a failure (its kind a ``Status``, never a free string); stop needs no answer. ``encode`` makes the
JSON header that ``harness.contract.protocol`` frames; ``decode`` accepts only a header that is
exactly one of the kinds expected from that side (the worker can send no request, the parent no
reply): an unknown kind, a missing or unknown field or a field of the wrong type is a
``ProtocolError`` of one line. What the parent reads of a worker's reply is what ``decode`` returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from harness.contract.results import Status

KIND_KEY = "op"
"""The header key under which a message names its kind (the wire's own word, kept as it was)."""


class ProtocolError(Exception):
    """The channel carried something the harness did not send or expect."""


@dataclass(frozen=True)
class Start:
    """Import the submission (``unsealed``: the parent wants no compiled core, e.g. under Nsight Compute)."""

    KIND: ClassVar[str] = "start"
    device: str
    reference_module: str
    task_py: str
    submission: str
    unsealed: bool = False
    limit_s: float | None = None  # the parent's limit for the reply: the worker's watchdog dumps its stacks just before
    compile_cache: dict[str, Any] = field(default_factory=dict)  # the owner's cache variables (empty: its own folder)
    # GPU, ranked: the cases (public seeds) whose calls' inputs the core will draw; their draws are
    # captured as CUDA graphs before the import (harness.worker.drawn_inputs).
    draws: list[dict[str, Any]] = field(default_factory=list)
    # GPU, sealed: the parent's device snapshot (output_file.SNAPSHOT_BYTES), whose descriptor follows this
    # message on the command channel (SCM_RIGHTS); 0: none.
    snapshot_bytes: int = 0


@dataclass(frozen=True)
class Ready:
    """The submission imported; the timer the worker runs, and what its sandbox took effect as."""

    KIND: ClassVar[str] = "ready"
    import_s: float
    timer: str
    persisting_l2_reset: bool
    sealed: bool
    overhead_us: float | None
    sandbox: dict[str, Any]
    steps_s: dict[str, Any] = field(default_factory=dict)  # the worker's own seconds per Start step before the import
    placements: dict[str, Any] = field(default_factory=dict)  # captured draws per case shape, taken in turn by calls
    streams: int = 1  # the streams the core's windows take in turn (CALL_STREAMS on a GPU)


DRAW_PLACEMENTS = 8
"""The most captures of one shape's draw a worker takes in turn (harness/worker/drawn_inputs.py), each at addresses
of its own: a short kernel's time depends on where its buffers lie (docs/timing.md). The parent warms every one of
a case's placements before timing it, and never believes a worker that claims more."""

CALL_STREAMS = 8
"""The streams the compiled core's windows take in turn, call ``index`` on stream ``index % CALL_STREAMS``
(harness/worker/csrc/gpu_window.h): a short kernel's event time moves with the stream it runs on (docs/timing.md).
The parent warms every stream before timing a case, and never believes a worker that claims more."""


WORKER_STEPS = ("reference", "timer", "draws", "filter")
"""The steps of a worker's Start before the import that ``Ready.steps_s`` reports: the problem module
imported, the timer made (the compiled core's calibration), the draws captured, the syscall filter
installed. Each depends on the problem only, not on the submission."""
WORKER_AHEAD = ("ahead", "ahead_kernels")
"""What ``Ready.steps_s`` reports of the worker's time before its Start request: from its entry until it
was ready for Start (imports, ``eval``'s CUDA context, the draws' kernels), and of those the draws'
kernels (harness/worker/compile_ahead.py). Overlapped with the parent's start or another file's run."""
ENTERED_AT = "@entered"
"""An instant ``Ready.steps_s`` carries, in seconds of the monotonic clock parent and worker share: the worker's
first line (harness.worker.boot). The parent books ``worker_entry``, its spawn to that line: the two
interpreters' starts (the reaper's and the worker's), 0.52-0.71 s on the H100 when the worker compiled their
start-up modules, 0.11-0.18 s once the bytecode cache held them (docs/results.md run 31)."""
RECEIVED_AT, REPLYING_AT = "@received", "@replying"
"""Two instants an ``Output.spent_ms`` carries, in ms of the monotonic clock parent and worker share: when the
worker read the call's request, and when it began writing this reply. The parent turns them into the
exchange's ``link.in``, ``handler`` and ``link.out`` (shown, like every figure of the worker's, never used)."""


@dataclass(frozen=True)
class Prepare:
    """Draw the next call's inputs now, untimed, while the parent checks the last answer."""

    KIND: ClassVar[str] = "prepare"
    case: dict[str, Any]
    limit_s: float | None = None  # the parent's limit for the reply: the worker's watchdog dumps its stacks just before


@dataclass(frozen=True)
class Prepared:
    """Where each drawn input lies in device memory, and the worker's own account of the draw."""

    KIND: ClassVar[str] = "prepared"
    placements: list[dict[str, Any]]
    spent_ms: dict[str, Any]


@dataclass(frozen=True)
class Call:
    """One call of ``custom_kernel`` (``plain``: sanitize mode, no timer, no flush, no seal; ``buffers``:
    "keep" this call's input tensors, or "refill" the kept ones with this call's inputs; ``staged``:
    its inputs are the parent's, decrypted by the worker's core; ``sealed_seed``: drawn by the core)."""

    KIND: ClassVar[str] = "call"
    case: dict[str, Any]
    sleep_us: float
    index: int
    plain: bool = False
    buffers: str = ""
    limit_s: float | None = None  # the parent's limit for the reply: the worker's watchdog dumps its stacks just before
    # Ranked: the inputs are the parent's, encrypted in its staging file for this index; ``case`` then
    # holds the case's public seed, which the worker draws the tensors' layout from (input_stage).
    staged: bool = False
    # GPU, every timed mode: the call's seed masked for the core (input_stage.sealed_seed), which draws the inputs
    # from the case's captured graph (``case`` holds the public seed); empty otherwise.
    sealed_seed: bytes = b""


@dataclass(frozen=True)
class WindowClosed:
    """A timed call's window is over on the GPU (the compiled core says so before it copies, digests and
    signs: csrc/output_copies.c): the parent may start its own GPU work for the check. Advisory, never
    trusted: one sent early only runs the parent's work beside the submission's own window."""

    KIND: ClassVar[str] = "window_closed"
    index: int


@dataclass(frozen=True)
class Output:
    """A call's result; its tensors follow the header. ``mac``: the compiled core's seal, if any."""

    KIND: ClassVar[str] = "output"
    time_us: float
    host_us: float
    structure: str  # "tensor" or "list": how custom_kernel returned its outputs
    unfinished: bool
    exposed: bool = False
    mac: bytes = b""
    spent_ms: dict[str, Any] = field(default_factory=dict)
    # The second clock's reading of the call (0 off the GPU), signed with the rest: the events' time,
    # the GPU's own clock, how much more that read (less the end stamp's wait), the allowance for it.
    event_us: float = 0.0
    clock_us: float = 0.0
    clock_gap_us: float = 0.0
    clock_allowance_us: float = 0.0


@dataclass(frozen=True)
class Profile:
    """One call under torch.profiler (``under_ncu``: a warm call, then one in Nsight Compute's range)."""

    KIND: ClassVar[str] = "profile"
    case: dict[str, Any]
    under_ncu: bool = False
    limit_s: float | None = None  # the parent's limit for the reply: the worker's watchdog dumps its stacks just before


@dataclass(frozen=True)
class Profiled:
    """torch.profiler's table of the profiled call (shown, never parsed)."""

    KIND: ClassVar[str] = "profiled"
    table: str


@dataclass(frozen=True)
class Recheck:
    """Measure the event overhead again; the core signs its answer over this nonce."""

    KIND: ClassVar[str] = "recheck"
    nonce: bytes
    limit_s: float | None = None  # the parent's limit for the reply: the worker's watchdog dumps its stacks just before


@dataclass(frozen=True)
class Rechecked:
    """The overhead in use, a fresh measurement, the spread of its rounds, and the core's MAC."""

    KIND: ClassVar[str] = "rechecked"
    overhead_us: float
    fresh_us: float
    spread_us: float
    mac: bytes


@dataclass(frozen=True)
class Stop:
    """End the worker's loop (a worker under a wrapper exits by itself, so the wrapper can report)."""

    KIND: ClassVar[str] = "stop"


WORKER_FAILURES = frozenset({Status.FAILED, Status.REJECTED, Status.CRASHED, Status.CUDA_ERROR, Status.BAD_INPUT,
                             Status.HARNESS_FAULT})
"""The statuses a worker may end a request with; the rest (passed, timeout, unsupported, ...) are the
parent's to decide."""


@dataclass(frozen=True)
class Error:
    """The request ended in a failure the worker classified: its status, one line, its traceback."""

    KIND: ClassVar[str] = "error"
    status: Status
    message: str
    traceback: str = ""

    def __post_init__(self) -> None:
        if self.status not in WORKER_FAILURES:
            raise ValueError(f"status '{self.status.value}' is not a failure a worker may report")


Request = Start | Prepare | Call | Profile | Recheck | Stop
Reply = Ready | Prepared | Output | Profiled | Rechecked | Error
Message = Request | Reply


def _number(value: Any) -> float:
    if type(value) not in (int, float):
        raise TypeError
    return float(value)


def _exact(kind: type) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if type(value) is not kind:
            raise TypeError
        return value
    return check


def _records(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise TypeError
    return value


_FROM_WIRE: dict[str, Callable[[Any], Any]] = {
    "str": _exact(str),
    "bool": _exact(bool),
    "int": _exact(int),
    "float": _number,
    "float | None": lambda value: None if value is None else _number(value),
    "bytes": lambda value: bytes.fromhex(_exact(str)(value)),
    "Status": lambda value: Status(_exact(str)(value)),
    "dict[str, Any]": _exact(dict),
    "list[dict[str, Any]]": _records,
}
"""How each field type is read from JSON: exactly that type, else TypeError or ValueError."""
_TO_WIRE: dict[str, Callable[[Any], Any]] = {"bytes": bytes.hex, "Status": lambda status: status.value}


def _kinds(*records: type) -> Mapping[str, type]:
    """The records by kind; every field's type must be one the wire can carry (checked at import)."""
    for record in records:
        unknown = [f.type for f in fields(record) if f.type not in _FROM_WIRE]
        if unknown:
            raise TypeError(f"{record.__name__}: no wire form for {unknown}")
    return {record.KIND: record for record in records}


REQUESTS = _kinds(Start, Prepare, Call, Profile, Recheck, Stop)
"""What the parent may send and the worker accepts."""
REPLIES = _kinds(Ready, Prepared, WindowClosed, Output, Profiled, Rechecked, Error)
"""What the worker may send and the parent accepts."""


def encode(message: Message) -> dict[str, Any]:
    """The JSON header of a record: its kind, then its fields in their wire form."""
    header: dict[str, Any] = {KIND_KEY: message.KIND}
    for item in fields(message):
        value = getattr(message, item.name)
        header[item.name] = _TO_WIRE[item.type](value) if item.type in _TO_WIRE else value
    return header


def decode(header: Mapping[str, Any], expected: Mapping[str, type]) -> Any:
    """The record a header carries, if it is one of the ``expected`` kinds, whole and well typed."""
    kind = header.get(KIND_KEY)
    record = expected.get(kind) if isinstance(kind, str) else None
    if record is None:
        raise ProtocolError(f"a message of kind {kind!r} where only {', '.join(expected)} may come")
    given = {key: value for key, value in header.items() if key != KIND_KEY}
    declared = {f.name: f for f in fields(record)}
    unknown = sorted(set(given) - set(declared))
    missing = [f.name for f in declared.values() if f.name not in given and f.default is MISSING
               and f.default_factory is MISSING]
    if unknown or missing:
        what = f"unknown field(s) {', '.join(unknown)}" if unknown else f"no {', '.join(missing)}"
        raise ProtocolError(f"a message '{kind}' with {what}")
    values = {}
    for name, value in given.items():
        try:
            values[name] = _FROM_WIRE[declared[name].type](value)
        except (TypeError, ValueError):
            raise ProtocolError(f"a message '{kind}' whose {name} is not of type {declared[name].type}") from None
    try:
        return record(**values)
    except ValueError as error:  # a value the record itself refuses (a failure no worker may report)
        raise ProtocolError(f"a message '{kind}' whose {error}") from None
