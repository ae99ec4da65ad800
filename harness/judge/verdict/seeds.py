"""Seeds of every call: public in test and benchmark modes, secret-derived in ranked mode.

Each timed call gets its own seed, so its inputs are fresh; the worker only ever sees the seed
of the call it is making, never the organizer's secret.
"""

from __future__ import annotations

import hashlib
import os
import stat
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
    """The organizer's secret from a file or the environment (then removed from it).

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
        raw = os.environ.pop(SECRET_ENV, None)
    if raw is None:
        return None
    try:
        return int(raw, 0)
    except ValueError:
        raise ValueError(f"the secret seed must be an integer, got {raw[:20]!r}") from None
