"""Where procfs is mounted: read by the supervisor (its open rules) and the worker (its Landlock rules).

Every procfs mount whose root is procfs's own reaches every process's ``/<pid>/mem``, so each is
named here, not only ``/proc``.
"""

from __future__ import annotations


def proc_roots(mountinfo: str) -> list[str]:
    """Mount points of procfs whose root is procfs's own (where /<pid>/mem can be reached)."""
    roots = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        fstype = line.split(" - ", 1)[1].split()[0]
        if fstype == "proc" and fields[3] == "/":
            roots.append(fields[4].replace("\\040", " "))
    return roots or ["/proc"]
