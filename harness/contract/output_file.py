"""Outputs that never cross the pipe: which outputs go through the parent's output file, and its size;
on a GPU, the parent's device snapshot, which keeps them on the device.

The parent creates one file per worker (a sealed memfd, ``harness.judge.worker_link.output_reader``)
and hands its descriptor over at spawn; the worker's compiled core copies a call's outputs into it
after the MAC when ``through_file`` says so, and the reply's tensor entries then carry where they
lie (``FILE_KEY``) instead of their bytes. The parent reads them through its own descriptor into its
own memory and checks them against the digest the MAC covers, so nothing the worker does to the
file can pass for an output.
"""

from __future__ import annotations

FILE_MIN_BYTES = 64 << 10
"""Outputs of this many bytes or more in all go through the file: a pipe's default buffer, the size
one write carries without waking the reader in between. Not tuned: on the H100 a call cost 0.66 ms
through the pipe and 0.75 through the file at 64 KiB, 2.79 and 2.84 at 1 MiB, 10.1 and 4.3 at 8 MiB
(docs/results.md run 14)."""
FILE_BYTES = 1 << 31
"""The file's fixed size (sparse: memory is taken only where outputs are written), the largest
output the wire accepts (``protocol.MAX_TENSOR_BYTES``)."""
FILE_KEY = "at"
"""A tensor entry with this key: its ``nbytes`` lie in the output file from this offset."""
SNAPSHOT_KEY = "in_snapshot"
"""A tensor entry with this key: its ``nbytes`` lie in the parent's device snapshot from this offset."""
SNAPSHOT_BYTES = 256 << 20
"""The device snapshot's size (GPU memory, taken for the worker's life): a GPU worker's core copies the
outputs of a call that leaves the pipe (``through_file``) there instead of into the output file, on the
device, when they fit (each at a 256-byte offset), and the parent copies them out into its own memory on
the same GPU; outputs that do not fit take the output file. The fp8 blockwise GEMM's largest output is
201 MB."""


def through_file(total_bytes: int) -> bool:
    """The one rule: whether a call's outputs (``total_bytes`` in all) go through the output file.
    The worker hands its threshold to the compiled core, which applies it per call."""
    return total_bytes >= FILE_MIN_BYTES
