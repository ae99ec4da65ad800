"""The worker's command and result channels: one-way Unix stream socket pairs, not pipes.

A pipe can be opened again through ``/proc/<pid>/fd/<n>``, and its read end opened for writing is
its write end: a relay in the worker could put requests back after reading them first (row x10).
Landlock cannot refuse that open (pipes have no path it governs), and a supervisor that reads the
path races the kernel. The kernel refuses to open a socket through /proc at all (ENXIO), so a
socket pair closes the route for every process, with no rule to check. The parent's end is shut for
the other direction: the worker cannot write into its command channel, nor read its own results.
"""

from __future__ import annotations

import contextlib
import socket

BUFFER_BYTES = 1 << 20
"""The sender's buffer (best effort: the kernel caps it at net.core.wmem_max): small outputs and the
headers cross in one write; outputs of 64 KiB or more go through the parent's output file anyway."""


def channel(parent_sends: bool) -> tuple[int, int]:
    """(the parent's fd, the worker's fd) of one one-way channel; ``parent_sends``: the command
    channel (parent to worker), else the result channel."""
    parent, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    parent.shutdown(socket.SHUT_RD if parent_sends else socket.SHUT_WR)
    with contextlib.suppress(OSError):
        (parent if parent_sends else worker).setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, BUFFER_BYTES)
    return parent.detach(), worker.detach()
