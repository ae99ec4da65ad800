"""Seeds of every call: public in test and benchmark modes, secret-derived in ranked mode.

Each timed call gets its own seed, so its inputs are fresh; the worker only ever sees the seed
of the call it is making, never the organizer's secret.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import stat
import sys
from pathlib import Path

SECRET_ENV = "NVFP4_SECRET_SEED"
SEED_MASK = (1 << 63) - 1


def call_seed(case_seed: int, call_index: int, secret: int | None = None) -> int:
    """The seed of call ``call_index`` of a case; call 0 without a secret is the case's own seed."""
    if secret is None and call_index == 0:
        return int(case_seed)
    digest = hashlib.blake2b(f"{secret}:{case_seed}:{call_index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & SEED_MASK


def read_secret(seed_file: str | Path | None = None) -> int | None:
    """The organizer's secret from a file or the environment (then removed from it, its bytes wiped in
    the process's first environment block, which /proc/<pid>/environ shows whatever os.environ says).

    A regular file that its group or other users may read is refused: the worker runs as another
    user (uid 65534 under a root evaluator), and could read it. Pipes such as /dev/stdin pass.
    """
    if seed_file:
        path = Path(seed_file)
        if path.is_file() and path.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH):
            raise ValueError(f"{path}: the secret seed file is readable by other users (a submission's worker "
                             f"could read it); chmod 600 {path}")
        raw = path.read_text().strip()
    else:
        raw = os.environ.get(SECRET_ENV)
        wipe_from_environ_block(SECRET_ENV)
    if raw is None:
        return None
    try:
        return int(raw, 0)
    except ValueError:
        raise ValueError(f"the secret seed must be an integer, got {raw[:20]!r}") from None


def wipe_from_environ_block(name: str) -> None:
    """Unset ``name`` and overwrite its ``name=value`` bytes where the kernel keeps the environment the
    process started with: /proc/<pid>/environ reads that block, so a popped variable stays readable
    there to any process allowed to read the file (a worker that keeps root: harness.judge.worker_link
    .worker_spawn.kept_root). Only a string inside that block is wiped; one set later lives elsewhere."""
    if not sys.platform.startswith("linux"):
        os.environ.pop(name, None)
        return
    getenv = ctypes.CDLL(None).getenv
    getenv.restype, getenv.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    value = getenv(name.encode())
    os.environ.pop(name, None)  # unsetenv: environ no longer points into the bytes wiped below
    if not value:
        return
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()  # from field 3 (state) on
    block_start, block_end = int(fields[47]), int(fields[48])  # env_start, env_end: fields 50 and 51
    start = value - len(name) - 1
    length = len(name) + 1 + len(ctypes.string_at(value))
    if block_start <= start and start + length <= block_end:
        ctypes.memset(start, 0, length)
