"""Where the harness keeps what it caches between runs: one folder, its subfolders one cache each
(``compile``: the owners' compile caches a worker writes; ``bytecode``: the parent's, workers read it).

As root /var/cache/nvfp4-harness (a folder uid 65534 can reach: root's home is 0700), else
$XDG_CACHE_HOME/nvfp4-harness or ~/.cache/nvfp4-harness. Only the standard library is imported:
``python -m harness`` reads it before anything else (harness/bytecode_cache.py).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """The harness's cache folder (not made here)."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/cache/nvfp4-harness")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nvfp4-harness"
