"""What the harness's own Triton kernels (the reference's, the input draws') need before Triton is
imported for them: a cache it can write, and the key of Triton's install where the harness remembered it.

Shared by reference/ (the block kernel) and problems/ (the counter RNG's kernels), so it lives at
the bottom of the two.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TRITON_KEY = "NVFP4_TRITON_KEY"
"""The key of Triton's install (``triton.runtime.cache.triton_key``) as the harness remembered it
(harness/triton_key.py), named by the parent to itself and its workers (harness/contract/cache_home.py
names the same variable: reference/ imports nothing of the harness); unset: Triton computes it."""


def prepare_triton() -> None:
    """Called before a harness module imports Triton for its kernels."""
    writable_triton_cache()
    adopt_remembered_key()


def adopt_remembered_key() -> None:
    """Triton's key taken from ``TRITON_KEY`` instead of hashed again by this process (0.4-0.6 s before its
    first compile or cache lookup); nothing where it is unset."""
    key = os.environ.get(TRITON_KEY)
    if not key:
        return
    import sys

    try:
        from triton.runtime import cache
    except ImportError:  # no Triton here: nothing to adopt
        return
    original = cache.triton_key
    if getattr(original, "remembered", False):
        return

    def triton_key() -> str:
        return key

    triton_key.remembered = True  # type: ignore[attr-defined]
    for module in list(sys.modules.values()):  # the modules that imported it by name (triton.runtime.autotuner)
        if getattr(module, "__name__", "").startswith("triton") and getattr(module, "triton_key", None) is original:
            module.triton_key = triton_key


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
