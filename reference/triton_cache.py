"""Where Triton compiles, made writable: the reference's and the input draws' Triton kernels.

Shared by reference/ (the block kernel) and problems/ (the counter RNG's kernels), so it lives at
the bottom of the two.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def writable_triton_cache() -> None:
    """Triton compiles into ~/.triton/cache; where that cannot be written (an evaluator run as a user
    other than HOME's owner: seen on the H100), point TRITON_CACHE_DIR at a private folder."""
    if os.environ.get("TRITON_CACHE_DIR"):
        return
    folder = Path(os.environ.get("TRITON_HOME") or Path.home()) / ".triton" / "cache"
    try:  # a HOME of another user may not even be searchable: stat raises there
        while not folder.exists() and folder.parent != folder:
            folder = folder.parent
        writable = os.access(folder, os.W_OK)
    except OSError:
        writable = False
    if not writable:
        os.environ["TRITON_CACHE_DIR"] = str(_private_cache_folder())


def _private_cache_folder() -> Path:
    """One folder per user, kept across runs (compiled kernels are reused, nothing piles up in /tmp).

    Triton loads compiled launchers from its cache into this process: a folder someone else made
    or can write is never used (a fresh temporary one is then).
    """
    folder = Path(tempfile.gettempdir()) / f"nvfp4-triton-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        status = folder.lstat()
        if folder.is_symlink() or status.st_uid != os.getuid() or status.st_mode & 0o077:
            raise PermissionError(f"{folder} is not this user's private folder")
        return folder
    except OSError:
        return Path(tempfile.mkdtemp(prefix="nvfp4-triton-"))
