"""Where the harness keeps what it caches between runs: one folder, its subfolders one cache each
(``compile``: the owners' compile caches a worker writes; ``bytecode`` and ``triton``: the parent's
own, which workers read and never write).

As root /var/cache/nvfp4-harness (a folder uid 65534 can reach: root's home is 0700), else
$XDG_CACHE_HOME/nvfp4-harness or ~/.cache/nvfp4-harness. Only the standard library is imported:
``python -m harness`` reads it before anything else (harness/bytecode_cache.py).
"""

from __future__ import annotations

import os
from pathlib import Path

HARNESS_KERNELS = "NVFP4_HARNESS_KERNELS"
"""The worker's variable naming the parent's Triton cache, where it finds the draws' kernels compiled
(harness/worker/compile_ahead.py): read there, never written."""
TRITON_KEY = "NVFP4_TRITON_KEY"
"""The variable naming the key of Triton's install the parent remembered (harness/triton_key.py) to itself and
its workers; the same name as reference/triton_cache.py's, where the harness's kernels adopt it."""


def cache_home() -> Path:
    """The harness's cache folder (not made here)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/cache/nvfp4-harness")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nvfp4-harness"


def evaluators_folder(folder: Path, make: bool) -> bool:
    """Whether ``folder`` is this user's and no one else may write it: what the parent runs from it
    (bytecode, compiled kernels) is then no more exposed than the harness's own sources. ``make``: made
    if missing and set 0755 (a folder of the harness's own); else only looked at (one the user named)."""
    try:
        if make:
            folder.mkdir(parents=True, exist_ok=True)
        status = folder.stat()
        if status.st_uid != os.geteuid():
            return False
        if make:
            folder.chmod(0o755)
            return True
        return not status.st_mode & 0o022
    except OSError:
        return False
