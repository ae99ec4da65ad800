"""What the parent says to one worker and what it accepts back: one request, one reply.

Anything unexpected on the result channel, a death by signal or a stage past its time limit ends
as a ``WorkerFailure`` carrying one status and one line of reason. Every timed result's MAC is
checked here against the key the worker's core was given (``harness.judge.worker_link.seal``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import torch

from harness.contract import messages, protocol
from harness.contract.messages import (
    CALL_STREAMS,
    DRAW_PLACEMENTS,
    Output,
    Prepared,
    Profiled,
    Ready,
    Rechecked,
    WindowClosed,
)
from harness.contract.results import Status
from harness.contract.task_spec import Task, shape_text
from harness.judge.worker_link import compile_cache, device_snapshot, input_stage, seal
from harness.judge.worker_link.call_output import CallOutput, SentCall, reported_ms
from harness.judge.worker_link.check_copies import CheckCopies
from harness.judge.worker_link.device_snapshot import DeviceSnapshot
from harness.judge.worker_link.hang_report import hung_at
from harness.judge.worker_link.supervision import STATE_OPENS_AT_BIND
from harness.judge.worker_link.worker_process import WorkerProcess

R = TypeVar("R")


class WorkerFailure(Exception):
    """A case's end: one status, one line of reason, and the worker's traceback (or, on a timeout,
    its stacks) when there is one, for ``--verbose`` and the JSON result."""

    def __init__(self, status: Status, reason: str, traceback: str = "") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.traceback = traceback


class WorkerSession:
    """The parent's conversation with one worker for one submission; use as a context manager."""

    def __init__(self, task: Task, submission: Path, device: str, visible_devices: str | None = None,
                 command_prefix: list[str] | None = None, keep_uid: bool = False, unsealed: bool = False,
                 cache_owner: str | None = None) -> None:
        self.task = task
        self.cache_owner = cache_owner  # whose compile caches the worker keeps (None: its own, thrown away)
        self.submission = submission
        self.device = device
        self.unsealed = unsealed  # a worker without the compiled core (under Nsight Compute): never ranked
        self.worker = WorkerProcess(submission, device, visible_devices, list(command_prefix or []), keep_uid)
        self.sealed = False
        self.overhead_us: float | None = None
        self.first_overhead_us: float | None = None  # the core's, before the import: a recheck's ceiling
        self._next_index = 0
        self._prepare_pending = False
        self._prepared_ms: dict[str, float] = {}  # the worker's report on its last draw
        self._drawn: set[tuple] = set()  # the cases whose inputs the worker's core draws (start's ``draws``)
        self._placements: dict[str, int] = {}  # their draws' placements by shape, as the worker said (Ready)
        self._streams = 1  # the streams the core's windows take in turn, as the worker said (Ready)
        self._macs = 0  # results whose MAC this session verified: one opening of the core's key page each
        self._state_opens = STATE_OPENS_AT_BIND  # the read-write openings of the call-state page those imply
        self._ahead: SentCall | None = None  # a call sent before the parent asked for it (send_ahead)
        self.check_on: torch.device | None = None  # a GPU the check reads outputs on: copied there in call()
        self._check_copies = CheckCopies()
        self._snapshot: DeviceSnapshot | None = None  # the worker's device snapshot (start), released at close

    def __enter__(self) -> WorkerSession:
        self.spawn()
        return self

    def spawn(self) -> None:
        """Start the worker process (its start request is ``start``)."""
        self.worker.spawn()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.worker.close()
        if self._snapshot is not None:  # after the worker: its mapping ended with it
            self._snapshot.close()
            self._snapshot = None

    def alive(self) -> bool:
        """Whether the worker still runs (a case that killed it leaves the rest to a fresh one)."""
        return self.worker.alive()

    def output_tail(self, limit: int = 2000) -> str:
        return self.worker.output_tail(limit)

    def syscalls_line(self) -> str:
        """The sandbox line's 'syscalls' entry, from the supervisor's own record (not the worker's)."""
        return self.worker.supervision.sandbox_line()

    def _supervised(self) -> None:
        """Whatever the worker sent, a refusal of the syscall supervisor written before it decides."""
        supervision = self.worker.supervision
        for status, why in ((Status.REJECTED, supervision.violation()), (Status.HARNESS_FAULT, supervision.fault())):
            if why:
                self.worker.kill()
                raise WorkerFailure(status, why)

    def _count_state(self) -> None:
        """The core opens its call-state page read-write three times at bind, twice per timed result (at
        time_call's entry and when custom_kernel returns, before the end event) and once per recheck;
        every opening is counted (docs/security.md). Any other count means code other than the core's
        opened it: the gate's syscall reached by a jump, or a call the parent did not ask for."""
        supervision = self.worker.supervision
        if supervision.expected and supervision.counts_state() and supervision.state_opens() != self._state_opens:
            self.worker.kill()
            raise WorkerFailure(Status.REJECTED, f"the core's call-state page was opened {supervision.state_opens()} "
                                f"times for {self._macs} signed results (rule 'core': the core opens it "
                                f"{STATE_OPENS_AT_BIND} times at the import, twice per timed result and once "
                                f"per recheck: {self._state_opens})")

    def _count_mac(self, state_opens: int) -> None:
        """One more verified MAC, for which the core opened its call-state page ``state_opens`` times:
        the core must have opened its key page exactly once per MAC, or code other than the core's
        opened it (the gate's syscall, reached by a jump)."""
        self._macs += 1
        self._state_opens += state_opens
        self._count_state()
        supervision = self.worker.supervision
        if supervision.expected and supervision.guards_key() and supervision.unlocks() != self._macs:
            self.worker.kill()
            raise WorkerFailure(Status.REJECTED, f"the core's key page was opened {supervision.unlocks()} times "
                                f"for {self._macs} signed results (rule 'core': only the core's own MACs open it)")

    def _expect(self, kind: type[R] | tuple[type[Any], ...], stage: str, timeout_s: float,
                spent_s: float = 0.0) -> tuple[R, protocol.Received]:
        """The reply of ``kind`` (or of one of a tuple of kinds) and how it came, or the WorkerFailure that ended
        the request; ``spent_s``: the part of ``timeout_s`` already gone since the request was sent."""
        try:
            message = self.worker.messages.get(timeout=max(0.0, timeout_s - spent_s))
        except queue.Empty:
            self._supervised()
            stacks = self.worker.stacks()
            self.worker.kill()
            raise WorkerFailure(
                Status.TIMEOUT,
                f"{stage} took longer than {timeout_s:g} s (task.yml timeouts_s, times --timeout-scale); the worker "
                f"was killed{hung_at(stacks, self.submission)}",
                stacks,
            ) from None
        self._supervised()
        if isinstance(message, EOFError):
            raise WorkerFailure(Status.CRASHED, f"the worker {self.worker.exit_text()} during {stage}")
        if isinstance(message, BaseException):
            self.worker.kill()
            raise WorkerFailure(
                Status.REJECTED, f"something other than the harness wrote to the result channel ({message})"
            )
        reply = message.message
        if isinstance(reply, messages.Error):
            self.worker.kill()
            raise WorkerFailure(reply.status, f"{reply.message} (during {stage})", protocol.tail(reply.traceback))
        if not isinstance(reply, kind):
            self.worker.kill()
            raise WorkerFailure(Status.REJECTED, f"unexpected '{reply.KIND}' message on the result channel")
        return reply, message

    def _ensure_quiet(self) -> None:
        """Every reply answers one request: an extra message means someone else wrote one."""
        if not self.worker.messages.empty():
            message = self.worker.messages.get()
            if isinstance(message, EOFError):
                self.worker.messages.put(message)
                return
            self.worker.kill()
            raise WorkerFailure(Status.REJECTED, "an unrequested message appeared on the result channel")

    def start(self, draws: list[dict[str, Any]] | None = None) -> Ready:
        """Import the submission in the worker; returns the worker's Ready reply. ``draws``: the cases
        whose timed calls' inputs the worker's core will draw itself (a GPU's, in every timed mode; captured
        before the import)."""
        limit_s = self.task.timeouts_s["import"]
        spawned = self.worker.spawned
        caches = compile_cache.owner_variables(spawned.cache_root, self.cache_owner, spawned.drop_to_uid) if (
            spawned is not None and spawned.cache_root is not None and self.cache_owner) else {}
        self._snapshot = device_snapshot.for_worker(self.device, self.check_on, self.unsealed)
        self.worker.send(messages.Start(device=self.device, reference_module=self.task.reference_module,
                                        task_py=str(self.task.task_py), submission=str(self.submission),
                                        unsealed=self.unsealed, limit_s=limit_s, compile_cache=caches,
                                        draws=list(draws or []),
                                        snapshot_bytes=self._snapshot.nbytes if self._snapshot else 0))
        if self._snapshot is not None:
            # The core maps it before the syscall filter exists: an opening of its page nobody counts.
            self._snapshot.hand_over(self.worker.spawned.commands_w, self.worker.places, self.worker.settlers)
        ready, _ = self._expect(Ready, "import of the submission", limit_s)
        # The parent, not the worker, decides whether results must be sealed: a worker that says it
        # is not (a downgrade) while this install has the core is lying.
        self.sealed = seal.sealed_core_built() and not self.unsealed
        if self.sealed and (not ready.sealed or ready.overhead_us is None):
            self.worker.kill()
            raise WorkerFailure(Status.REJECTED, "the worker did not start the compiled timing core (downgrade)")
        self.overhead_us = self.first_overhead_us = ready.overhead_us
        self._drawn = {shape_text(case) for case in draws or []} if self.sealed else set()
        self._placements = {shape: count for shape, count in ready.placements.items() if type(count) is int}
        self._streams = ready.streams if self.sealed and type(ready.streams) is int else 1
        why = self.worker.supervision.not_armed()
        if why:
            self.worker.kill()
            raise WorkerFailure(Status.HARNESS_FAULT, why)
        self._supervised()
        if self.sealed:
            self._count_state()
        return ready

    def _request(self, request: messages.Request) -> None:
        """Send one request (its ``limit_s``, the parent's limit for the reply, arms the worker's watchdog)."""
        if self._ahead is not None:  # its reply would be taken for an unrequested message
            raise RuntimeError("a request was made while a call sent ahead is still unanswered")
        if self._prepare_pending:  # every request but a Prepare first collects the drawn inputs' reply
            self._await_prepared(self.task.timeouts_s["warmup"])
        self._ensure_quiet()
        self.worker.mark_stacks()
        with contextlib.suppress(OSError):  # a worker that is gone: _expect reports how it ended
            self.worker.send(request)

    def profile(self, case: dict[str, Any], timeout_s: float, under_ncu: bool = False) -> str:
        """One call under torch.profiler in the worker; returns its table (shown, not parsed).
        ``under_ncu``: a warm call, then one call in the range Nsight Compute profiles."""
        self._request(messages.Profile(case=case, under_ncu=under_ncu, limit_s=timeout_s))
        profiled, _ = self._expect(Profiled, "a profiled call", timeout_s)
        return profiled.table[:20000]

    def prepare(self, case: dict[str, Any]) -> None:
        """Ask the worker to draw the next call's inputs now; the reply is read by the next call."""
        self._request(messages.Prepare(case=case, limit_s=self.task.timeouts_s["warmup"]))
        self._prepare_pending = True

    def _await_prepared(self, timeout_s: float) -> Prepared:
        self._prepare_pending = False
        prepared, _ = self._expect(Prepared, "drawing the inputs", timeout_s)
        self._prepared_ms = reported_ms(prepared.spent_ms)
        return prepared

    def prepare_inputs(self, case: dict[str, Any], timeout_s: float) -> list[dict[str, Any]]:
        """The worker draws the next call's inputs and says where they lie on the device."""
        self.prepare(case)
        return self._await_prepared(timeout_s).placements

    def _send_call(self, case: dict[str, Any], sleep_us: float, timeout_s: float, plain: bool, buffers: str,
                   staged: Any = None, drawn_seed: int | None = None) -> SentCall:
        index, self._next_index = self._next_index, self._next_index + 1
        started = time.perf_counter()
        if staged is not None:
            assert self.worker.spawned is not None and self.worker.spawned.stage is not None
            input_stage.stage(self.worker.spawned.stage, input_stage.stage_key(self.worker.key), index, staged)
        self._request(messages.Call(case=case, sleep_us=sleep_us, index=index, plain=plain, buffers=buffers,
                                    limit_s=timeout_s, staged=staged is not None,
                                    sealed_seed=b"" if drawn_seed is None else input_stage.sealed_seed(
                                        self.worker.key, index, drawn_seed)))
        return SentCall(case, sleep_us, plain, buffers, index, started, time.perf_counter(), drawn_seed)

    def send_ahead(self, case: dict[str, Any], timeout_s: float, plain: bool = False, buffers: str = "",
                   drawn_seed: int | None = None) -> bool:
        """Send the next call (an untimed test's: no sleep) now, while the parent still
        judges the last one; the next ``call`` with the same arguments collects its reply instead of
        sending. Not sent (False) where a reply is still unread or a message waits on the channel:
        the next ``call`` then sends it itself and meets what is there as it does today. A staged call
        is never sent ahead (its inputs are staged as it is sent)."""
        if self._ahead is not None or self._prepare_pending or not self.worker.messages.empty():
            return False
        self._ahead = self._send_call(case, 0.0, timeout_s, plain, buffers, drawn_seed=drawn_seed)
        return True

    def stages(self) -> bool:
        """Whether this session can stage a call's inputs (input_stage): a sealed CPU worker with a staging
        file (a GPU worker's core draws them: ``draws``)."""
        spawned = self.worker.spawned
        return self.sealed and self.device == "cpu" and spawned is not None and spawned.stage is not None

    def draws(self, case: dict[str, Any]) -> bool:
        """Whether this session's core draws ``case``'s inputs itself (its worker captured the draw at
        Start: ``start(draws=...)``)."""
        return self.sealed and shape_text(case) in self._drawn

    def placements(self, case: dict[str, Any]) -> int:
        """How many placements of ``case``'s draw the core takes in turn (1 where it does not draw it), as the
        worker said, within DRAW_PLACEMENTS: a larger claim could only lengthen the warm-up that visits them."""
        if not self.draws(case):
            return 1
        return min(DRAW_PLACEMENTS, max(1, self._placements.get(shape_text(case), 1)))

    def warm_calls(self, case: dict[str, Any]) -> int:
        """How many calls of ``case`` run before any is timed, at least: one on each of its placements and each
        of the core's streams (calls take both in turn by index), so that whatever the submission keys on its
        inputs' addresses or its stream (a cache, the allocator's per-stream pools) is made before timing. The
        worker's stream count is believed within CALL_STREAMS, like its placements."""
        return max(self.placements(case), min(CALL_STREAMS, max(1, self._streams)))

    def call(self, case: dict[str, Any], sleep_us: float, stage: str, timeout_s: float,
             plain: bool = False, buffers: str = "", answered: Callable[[], None] | None = None,
             staged: Any = None, drawn_seed: int | None = None, answer_early: bool = False) -> CallOutput:
        """One call; ``plain`` (sanitize mode): no timer, no flush, no seal; ``buffers``: "keep" this
        call's input tensors, or "refill" the kept ones with this call's inputs (serve_loop._inputs).
        ``answered`` runs once the reply is in and its outputs' copies and digest are queued, before the
        digest is read back and the MAC checked: the caller's own work (the parent's GPU work for the check)
        is queued behind them and runs while the host waits for the digest (``check_copies``); its time is
        not booked to ``seal``. ``answer_early``: where the worker's core says the call's window is over on
        the GPU (messages.WindowClosed) before its reply, ``answered`` runs then instead, while the core still
        copies, digests and signs (its time then booked to neither ``exchange`` nor ``seal``). ``staged``: the
        call's inputs, drawn by the parent (``case`` then carries the public seed the worker draws the layout from):
        written encrypted for this index, and the MAC's seed is 0 (the worker never learns the call's
        seed). ``drawn_seed``: the seed of a call whose inputs the worker's core draws (``draws``); it
        travels masked for the core, which signs it unmasked. A call already sent (``send_ahead``) is
        collected; its time limit counts from its sending."""
        sent_call, self._ahead = self._ahead, None
        if sent_call is not None and (sent_call.case, sent_call.sleep_us, sent_call.plain, sent_call.buffers,
                                      sent_call.drawn_seed, staged is None) != (
                                          case, sleep_us, plain, buffers, drawn_seed, True):
            raise RuntimeError(f"the call sent ahead ({sent_call.case}) is not the one asked for ({case})")
        sent_call = sent_call or self._send_call(case, sleep_us, timeout_s, plain, buffers, staged, drawn_seed)
        index, started, sent = sent_call.index, sent_call.started, sent_call.sent
        answering = [0.0]

        def meanwhile() -> None:
            began = time.perf_counter()
            if answered is not None:
                answered()
            answering[0] += time.perf_counter() - began

        reply, received = self._expect((Output, WindowClosed), stage, timeout_s, time.perf_counter() - sent)
        if isinstance(reply, WindowClosed):  # the window is over on the GPU: the parent's work for the check starts
            if reply.index != index:
                self.worker.kill()
                raise WorkerFailure(Status.REJECTED, f"a window_closed message for call {reply.index} during call "
                                    f"{index}")
            if answer_early:
                try:
                    meanwhile()
                except BaseException:  # the parent's own failure while the reply is on its way: the worker
                    self.worker.kill()  # ends with the call (its reply would otherwise meet the next request)
                    raise
                answered = None
            reply, received = self._expect(Output, stage, timeout_s, time.perf_counter() - sent)
        tensors = received.tensors
        replied = time.perf_counter()
        finishes: list[Callable[[], None]] = []

        def verify(copies: list[Any]) -> None:
            if self.sealed and not plain:  # a plain call (sanitize mode) is neither timed nor ranked
                seed = 0 if staged is not None else int(case["seed"]) if drawn_seed is None else drawn_seed
                finishes.append(self._verify(lambda: seal.start_verify(self.worker.key, index, seed, self.overhead_us,
                                                                       reply, received.entries, copies)))

        checked = self._check_copies.deliver(tensors, self.check_on, verify, meanwhile)
        for finish in finishes:
            self._verify(finish)
            self._count_mac(state_opens=2)
        early = answering[0] if answered is None else 0.0  # the parent's work run while the worker finished
        phases = {"inputs_wait": sent - started, "exchange": replied - sent - early,
                  "seal": time.perf_counter() - replied - (answering[0] - early),
                  "exchange.handoff": replied - received.read_at if received.read_at else 0.0}
        drawn_ms, self._prepared_ms = self._prepared_ms, {}
        bad = [t for t in checked if isinstance(t, str)]
        if bad:
            output: Any = f"custom_kernel returned a {bad[0]}"
        elif reply.structure == "tensor" and len(checked) == 1:
            output = checked[0]
        else:
            output = list(checked)
        return CallOutput(
            time_us=reply.time_us,
            host_us=reply.host_us,
            output=output,
            unfinished=reply.unfinished,
            sealed=self.sealed,
            exposed=reply.exposed,
            clock=seal.ClockReading.of(reply),
            phases_s=phases,
            worker_ms={**drawn_ms, **reported_ms(reply.spent_ms, sent, received.read_at)},
        )

    def _verify(self, check: Any) -> Any:
        try:
            return check()
        except (seal.SealBroken, KeyError, TypeError, ValueError) as error:
            self.worker.kill()
            raise WorkerFailure(Status.REJECTED, f"{error}; the worker was stopped") from None

    def recheck_overhead(self, timeout_s: float) -> tuple[float, float, float] | None:
        """Ask the core to measure its event overhead again: (in use, fresh, spread), MAC-checked.

        None when results are not sealed (no core). When the fresh value is consistent the core
        adopts it, and so does the parent for the calls that follow (their MACs cover it).
        """
        if not self.sealed:
            return None
        nonce = os.urandom(seal.NONCE_BYTES)
        self._request(messages.Recheck(nonce=nonce, limit_s=timeout_s))
        rechecked, _ = self._expect(Rechecked, "the event-overhead recheck", timeout_s)
        values = self._verify(lambda: seal.verify_recheck(self.worker.key, nonce, rechecked))
        self._count_mac(state_opens=1)
        if values[0] != self.overhead_us:
            self.worker.kill()
            raise WorkerFailure(Status.REJECTED, "the timing core's overhead changed without the harness asking")
        if seal.overhead_moved(*values, self.first_overhead_us)[1]:
            self.overhead_us = values[1]
        return values
