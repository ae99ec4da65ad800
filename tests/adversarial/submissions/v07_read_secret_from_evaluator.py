"""Cheat 7: read the secret seed out of the evaluator, the worker's ancestor: its
/proc/<pid>/environ keeps NVFP4_SECRET_SEED even after the evaluator popped it from os.environ,
and its /proc/<pid>/maps and mem expose its memory (the secret, the expected outputs). Every
process from the worker's parent up to the evaluator (`python -m harness eval`) is tried: the
reaper between them (harness.judge.worker_link.worker_reaper) too. Raises if any of them can be read, so the
expected verdict is passed: the evaluator and the reaper make themselves non-dumpable. Meaningful
only for an unprivileged evaluator (root reads every process).

The parent is found through /proc/self/stat rather than os.getppid(): in the worker's own PID
namespace getppid() names the namespace's init, while /proc (the host's) still shows every
process by its host pid."""

from pathlib import Path

import _honest


def _parent_of(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _ancestors():
    """From the worker's parent up to the evaluator, at most four processes."""
    pid = _parent_of("self")
    for _ in range(4):
        if pid <= 1:
            return
        yield pid
        if b"harness\0eval" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
        pid = _parent_of(pid)


def _leaks(pid):
    found = []
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            if b"NVFP4_SECRET_SEED" in handle.read():
                found.append(f"{pid}'s environ holds NVFP4_SECRET_SEED")
    except OSError:
        pass
    for name in ("maps", "mem"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                if name == "maps" and handle.readline():
                    found.append(f"{pid}'s memory map is readable")
                elif name == "mem":
                    found.append(f"{pid}'s memory can be opened")
        except OSError:
            pass
    return found


def custom_kernel(data):
    leaks = [leak for pid in _ancestors() for leak in _leaks(pid)]
    if leaks:
        raise RuntimeError(f"the evaluator's side leaks: {'; '.join(leaks)}")
    return _honest.gemv(data)
