"""Between the evaluator and its worker: the process that sees that nothing of a run outlives it.

The evaluator starts this (``python -c ... worker_reaper.main``) instead of the worker itself, as
its user (root on the GPU hosts) and in the worker's process group. It makes itself a child
subreaper (``PR_SET_CHILD_SUBREAPER``): whatever the worker's tree leaves behind, a double fork
or a ``setsid`` included, becomes its child rather than init's. Where it may create one
(CAP_SYS_ADMIN), it also puts the worker in a new PID namespace under a small init of its own
(step ``pidns``): the worker then sees and signals no process outside (other entries' workers
run as the same uid), and the kernel kills every process in the namespace when that init ends.

When the worker exits, or the evaluator asks (SIGTERM, also sent when the evaluator dies), it
kills what is left, waits until it has no child, and ends as the worker ended (the same exit
code, or killed by the same signal), so the evaluator reads the worker's fate from it.

It runs no submission code and reads none of the worker's pipes; it only holds the worker's
descriptors until the fork. With the sandbox step ``syscalls`` it also runs the worker's syscall
supervisor in a thread (``harness.judge.worker_link.syscall_supervisor``), out of the worker's reach for the
same reasons. Limits (docs/security.md): a worker that runs as this process's own
user (an evaluator that is not root) can SIGKILL it; the worker then dies with it
(PR_SET_PDEATHSIG), but in the same PID namespace its orphans are left to init.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.contract import process_guard
from harness.judge.worker_link import syscall_supervisor, worker_confinement

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWPID = 0x20000000
_WAITED = {signal.SIGTERM, signal.SIGCHLD, signal.SIGUSR1}  # SIGUSR1: the parent asks for stacks
_DEFAULT_AGAIN = (signal.SIGPIPE, signal.SIGXFSZ)  # Python ignores these; the worker starts clean
SUPERVISOR_LAST_WORDS_S = 2.0


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def main(argv: list[str]) -> int:
    """argv: drop-to uid or '-', 'pidns' or '-', the worker's descriptors (comma-separated), the
    supervisor's socket and report pipe ('SOCKET,REPORT', or '-' for none), command."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)  # taken with sigwaitinfo, never asynchronously
    drop_to_uid = None if argv[0] == "-" else int(argv[0])
    descriptors = [int(fd) for fd in argv[2].split(",") if fd]
    supervisor = [int(fd) for fd in argv[3].split(",") if fd and fd != "-"]
    command = argv[4:]
    for fd in supervisor:  # this process's alone: closed at the worker's exec
        os.set_inheritable(fd, False)
    guard = threading.Thread(target=syscall_supervisor.serve, args=supervisor, daemon=True)
    if supervisor:  # before unshare(CLONE_NEWPID), after which this process can start no thread
        syscall_supervisor.prepare(supervisor[0])
        guard.start()
    libc = _libc()
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # as the evaluator: a worker of its uid reads none of its /proc
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    isolated = argv[1] == "pidns" and libc.unshare(CLONE_NEWPID) == 0
    os.environ[process_guard.ENV] = ("own PID namespace, ended with the run" if isolated else
                                     "a subreaper ends them with the run (same PID namespace)")
    status_r, status_w = os.pipe()  # the namespace's init sends the worker's wait status through it
    if isolated:  # the first child is PID 1 of the new namespace
        child, alive = _spawn(lambda: _init(drop_to_uid, command, descriptors + supervisor, status_w))
    else:
        child, alive = _spawn(lambda: _exec_worker(command), drop_to_uid)
    os.close(status_w)
    _close(descriptors)  # the worker's alone from here: no copy stays in this process
    status, stopped = _wait_for(child, stop_on_term=True)
    if stopped:  # the evaluator's stop: the worker (or the namespace's init, and with it all) first
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    _end_everything()
    if supervisor:  # its last count, once no task of the worker's uses the filter
        guard.join(SUPERVISOR_LAST_WORDS_S)
    os.close(alive)
    if isolated and status is not None:
        reported = os.read(status_r, 4)
        if len(reported) == 4:  # the init ended normally: this is the worker's own status
            status = struct.unpack("i", reported)[0]
    if status is None:
        _die_of(signal.SIGKILL)
    _end_as(status)
    return 1


def _close(descriptors: list[int]) -> None:
    for fd in descriptors:
        with contextlib.suppress(OSError):
            os.close(fd)


def _spawn(run: Callable[[], None], drop_to_uid: int | None = None) -> tuple[int, int]:
    """Fork a child that (as ``drop_to_uid`` when given) calls ``run``, which never returns; the
    child dies with this process. Returns its pid and the write end of a pipe the child reads
    EOF from once this process is gone (how it knows its parent died before the signal was armed)."""
    alive_r, alive_w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(alive_w)
            if drop_to_uid is not None:
                worker_confinement.drop_privileges(drop_to_uid)  # before arming: a uid change clears it
            _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if select.select([alive_r], [], [], 0)[0]:
                os._exit(1)
            os.close(alive_r)
            run()
        except BaseException as error:  # never back into the parent's code
            with contextlib.suppress(Exception):
                print(f"harness worker_reaper: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        os._exit(127)
    os.close(alive_r)
    return child, alive_w


def _exec_worker(command: list[str]) -> None:
    """In the worker's process, before exec: a clean signal state, then the command."""
    for number in _DEFAULT_AGAIN:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.execvp(command[0], command)


def _init(drop_to_uid: int | None, command: list[str], descriptors: list[int], status_w: int) -> None:
    """PID 1 of the worker's namespace: start the worker, reap every orphan, and once the worker
    has ended pass its status on and exit, which ends every process left in the namespace."""
    worker, _alive = _spawn(lambda: _exec_worker(command), drop_to_uid)
    _close(descriptors)
    status, _ = _wait_for(worker, stop_on_term=False)
    os.write(status_w, struct.pack("i", status if status is not None else 0))
    os._exit(0)


def _wait_for(child: int, stop_on_term: bool) -> tuple[int | None, bool]:
    """Reap children until ``child`` ends: (its wait status, False); (None, True) on SIGTERM."""
    while True:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return None, False
            if pid == 0:
                break
            if pid == child:
                return status, False
        number = signal.sigwaitinfo(_WAITED).si_signo
        if number == signal.SIGUSR1:  # the parent's request for the worker's stacks: passed on
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGUSR1)
        elif number == signal.SIGTERM and stop_on_term:
            return None, True


def _children() -> list[int]:
    """This process's children (its own and the orphans it adopted)."""
    me = os.getpid()
    try:
        return [int(pid) for pid in Path(f"/proc/{me}/task/{me}/children").read_text().split()]
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        found = []
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry.name))
        return found


def _end_everything() -> None:
    """SIGKILL every child until none is left: a killed orphan's own children come to this process
    next (it is their subreaper), and are killed in the next round."""
    while True:
        listed = _children()
        for pid in listed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            pid, _ = os.waitpid(-1, 0 if listed else os.WNOHANG)
        except ChildProcessError:
            return
        if not listed and pid == 0:  # a child that appeared after the listing: list again
            time.sleep(0.01)


def _end_as(status: int) -> None:
    """Exit with the worker's code, or die of the signal that killed it."""
    if os.WIFSIGNALED(status):
        _die_of(os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _die_of(number: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the worker's crash, not a core of this process
    if number not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
    os.kill(os.getpid(), number)
    os._exit(128 + number)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
