"""The parent's end of one worker's syscall supervisor: whether it armed, what it refused, its counts.

The supervisor (``harness.judge.worker_link.syscall_supervisor``, a thread of the worker's reaper) writes its
record as JSON lines to a pipe only the parent reads; each line is the whole record, so the last
one read is the state. A refusal is written before the refused syscall returns, so whatever the
worker sends afterwards arrives after it: the parent reads the pipe before judging each message.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import socket
import time
from typing import Any

from harness.contract import syscall_rules as rules
from harness.judge.worker_link import worker_confinement

ARM_WAIT_S = 10.0
"""How long, after the worker's 'ready', the parent waits for the supervisor's word that it armed."""
REPORT_PIPE_BYTES = 1 << 20
MIX_ENV = "NVFP4_SUPERVISOR_MIX"
"""A file to which each worker's supervisor appends its notifications by syscall (one JSON line per
worker: ``by_syscall``), for scripts/gpu_check.sh's supervisor step; unset: none written."""
WHAT = {rule.name: rule.what for rule in rules.RULES}
STATE_OPENS_AT_BIND = 3
"""The counted read-write openings of the core's call-state page while it imports the submission
(harness/worker/csrc/sealed.c: bind); after it, two per timed result and one per recheck
(WorkerSession._count_state)."""


def unavailable() -> str | None:
    """Why no supervisor can guard a worker started from this process (one line with the fix), or None."""
    why = rules.unavailable()
    if why:
        return why
    if os.geteuid() != 0:
        return ("the evaluator is not root: the supervisor reads the worker's memory map, memory and fd table, "
                "which a non-dumpable worker keeps from its own user; run the evaluator as root (workers then "
                "drop to uid 65534)")
    return None


def ranked_refusal() -> str | None:
    """Why a ranked run cannot be supervised here (the sandbox step off, or what ``unavailable``
    says), or None."""
    if "syscalls" not in worker_confinement.chosen_steps():
        return (f"the sandbox step 'syscalls' is off ({worker_confinement.STEPS_ENV}): ranked runs need the syscall "
                "supervisor; name it there, or leave the variable unset")
    return unavailable()


class Supervision:
    """One worker's supervisor as the parent sees it. ``wanted``: the parent asked for one (the
    sandbox step ``syscalls`` on, and a bare worker: no wrapper such as compute-sanitizer)."""

    def __init__(self, wanted: bool) -> None:
        why = unavailable() if wanted else "not chosen: NVFP4_SANDBOX, or a worker under a profiler or sanitizer"
        self.why_off = f"off ({why})" if why else None
        self.state: dict[str, Any] = {}
        self._pending = b""
        self.worker_end = self.supervisor_end = self.report_w = self.report_r = None
        if self.why_off is None:
            worker_end, supervisor_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self.worker_end, self.supervisor_end = worker_end.detach(), supervisor_end.detach()
            self.report_r, self.report_w = os.pipe()
            with contextlib.suppress(OSError):
                fcntl.fcntl(self.report_w, fcntl.F_SETPIPE_SZ, REPORT_PIPE_BYTES)
            os.set_blocking(self.report_r, False)

    @property
    def expected(self) -> bool:
        return self.why_off is None

    def passed_fds(self) -> tuple[int, ...]:
        return tuple(fd for fd in (self.worker_end, self.supervisor_end, self.report_w) if fd is not None)

    def spawned(self) -> None:
        """After the spawn: the parent keeps only the report pipe's read end."""
        for name in ("worker_end", "supervisor_end", "report_w"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def poll(self, wait_s: float = 0.0) -> None:
        """Read what the supervisor wrote so far (waiting up to ``wait_s`` for something new)."""
        if self.report_r is None:
            return
        if wait_s > 0:
            select.select([self.report_r], [], [], wait_s)
        while True:
            try:
                chunk = os.read(self.report_r, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:  # the supervisor's thread and its reaper are gone
                os.close(self.report_r)
                self.report_r = None
                break
            self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict) and record.get("event") == "state":
                    self.state = record

    def not_armed(self) -> str | None:
        """After the worker's 'ready': why the supervisor it was given did not arm, or None."""
        if not self.expected:
            return None
        deadline = time.monotonic() + ARM_WAIT_S
        while not self.state and self.report_r is not None and time.monotonic() < deadline:
            self.poll(wait_s=deadline - time.monotonic())
        if self.state.get("state") in ("armed", "ended"):
            return None
        return f"the syscall supervisor did not arm: {self.state.get('why') or 'no word from it'}"

    def violation(self) -> str | None:
        """The first refusal that rejects the run, as one line, or None."""
        self.poll()
        for name, detail in self.state.get("details", {}).items():  # in the order they first happened
            if name in rules.REJECTING:
                return f"the syscall supervisor refused {detail} (rule '{name}': {WHAT.get(name, '?')})"
        return None

    def quiet_refusals(self) -> dict[str, tuple[int, str]]:
        """Refusals that do not reject the run (libraries probe them): rule -> (count, first detail)."""
        details = self.state.get("details", {})
        return {name: (int(count), str(details.get(name, ""))) for name, count in self.state.get("refused", {}).items()
                if name not in rules.REJECTING}

    def fault(self) -> str | None:
        """Why the supervisor stopped guarding a live worker (a fault of the harness), or None."""
        self.poll()
        if self.expected and self.state.get("state") == "failed":
            return f"the syscall supervisor failed ({self.state.get('why')}); the worker's checked syscalls now fail"
        return None

    def unlocks(self) -> int:
        self.poll()
        return int(self.state.get("unlocks", 0))

    def state_opens(self) -> int:
        self.poll()
        return int(self.state.get("state_opens", 0))

    def counts_state(self) -> bool:
        """Whether the supervisor knows the core's call-state page (so that each counted opening is told)."""
        return bool(self.state.get("state_page"))

    def guards_key(self) -> bool:
        """Whether the supervisor knows the core's key page (so that every opening of it is counted)."""
        return bool(self.state.get("gate_pages"))

    def sandbox_line(self) -> str:
        """The 'syscalls' entry of the sandbox line: each rule on, or why the supervisor is off."""
        if not self.expected:
            return self.why_off or "off"
        if self.state.get("state") not in ("armed", "ended"):
            return f"off ({self.state.get('why') or 'the supervisor did not arm'})"
        line = "supervised: " + ", ".join(f"{name} on" for name in self.state.get("rules", []))
        line += "" if self.state.get("kcmp", True) else " (no kcmp: a CLONE_VM child is not the worker's)"
        return line + ("" if self.state.get("sync_wake", True) else
                       " (answers wake the worker on another CPU: Linux 6.6 hands them over on one)")

    def counts(self) -> tuple[int, float]:
        """(notifications answered, seconds the supervisor spent answering them)."""
        return int(self.state.get("notifications", 0)), float(self.state.get("handled_ms", 0.0)) / 1e3

    def close(self) -> None:
        """After the worker ended: the supervisor's last words, then the pipe closed."""
        self.spawned()
        deadline = time.monotonic() + 2.0
        while self.report_r is not None and time.monotonic() < deadline:
            self.poll(wait_s=0.1)
        if self.report_r is not None:
            os.close(self.report_r)
            self.report_r = None
        mix = os.environ.get(MIX_ENV)
        if mix and self.state.get("by_syscall"):
            with contextlib.suppress(OSError), open(mix, "a") as handle:
                handle.write(json.dumps(self.state["by_syscall"], sort_keys=True) + "\n")


def refusal_note(refusals: dict[str, tuple[int, str]]) -> str:
    """One line for a run's notes on the syscalls refused without rejecting it."""
    said = "; ".join(f"{detail} x{count} (rule '{name}': {WHAT.get(name, '?')})"
                     for name, (count, detail) in refusals.items())
    return f"the syscall supervisor refused, without rejecting the run: {said}"
