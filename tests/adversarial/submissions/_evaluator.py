"""What the cheat-7 rows share: the worker's ancestors up to the evaluator (`python -m harness eval`).

Not a submission (its name starts with an underscore). The parent is found through /proc/<pid>/stat
rather than os.getppid(): in the worker's own PID namespace getppid() names the namespace's init,
while /proc (the host's) still shows every process by its host pid. Under the worker's Landlock
rules no other process's /proc folder can be read, so the walk stops at the first ancestor."""

from pathlib import Path


def parent_of(pid):
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def ancestors():
    """From the worker's parent up to the evaluator, at most four processes."""
    pid = parent_of("self")
    for _ in range(4):
        if pid <= 1:
            return
        yield pid
        try:
            if b"harness\0eval" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return
            pid = parent_of(pid)
        except OSError:  # Landlock grants no other process's /proc files: the ancestors above are unseen
            return
