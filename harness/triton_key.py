"""Triton's key of its own install, computed once at install and remembered, not once per process.

Before its first compile or cache lookup, every process that uses Triton hashes Triton's own sources and
its libtriton (415 MB) into one key (``triton.runtime.cache.triton_key``): 0.42-0.45 s on the H100's host
(docs/results.md run 29 call 1), 0.57 s on a laptop core, paid by the parent and again by every worker
while a run waits for it. ``remember`` (``python -m harness.warm``, what `make install` runs) writes the
key into the parent's Triton cache beside a fingerprint of the files it hashes (each one's size, mtime
and inode: a stat, not a read); ``remembered`` gives it back while the fingerprint still matches, so a
Triton reinstalled or upgraded is hashed afresh. ``kernel_cache.enable`` names it to the harness's own
processes (reference/triton_cache.py: ``TRITON_KEY``), which adopt it before their first Triton kernel.
It is a hash of the install, no secret: a worker may read it, and a submission that changed it would
only miss its own cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sysconfig
from pathlib import Path

MEMO = "triton_key.json"
"""The file in the parent's Triton cache (harness/kernel_cache.py) that holds the key and its fingerprint."""
HASHED = ("compiler", "backends", "language")
"""Triton's source folders its key hashes (with runtime/cache.py, its version and libtriton)."""


def install_root() -> Path | None:
    """Triton's package folder, found without importing it (None where it is not installed)."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def fingerprint(root: Path) -> str:
    """A digest of the stat of every file Triton's key reads (a superset: every .py under ``HASHED``),
    its ``__init__`` (the version) and libtriton: any of them rewritten changes it."""
    library = f"libtriton.{sysconfig.get_config_var('EXT_SUFFIX').split('.')[-1]}"
    files = [root / "__init__.py", root / "runtime" / "cache.py", root / "_C" / library]
    for folder in HASHED:
        files.extend(sorted((root / folder).rglob("*.py")))
    digest = hashlib.sha256()
    for path in files:
        status = path.stat()
        digest.update(f"{path.relative_to(root)}:{status.st_size}:{status.st_mtime_ns}:{status.st_ino}\n".encode())
    return digest.hexdigest()


def remembered(folder: Path) -> str | None:
    """The key remembered in ``folder`` while its fingerprint matches this install; else None."""
    root = install_root()
    if root is None:
        return None
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        memo = json.loads((folder / MEMO).read_text())
        if memo["fingerprint"] == fingerprint(root) and isinstance(memo["key"], str):
            return memo["key"]
    return None


def remember(folder: Path) -> str:
    """Compute Triton's key (importing Triton) and write it to ``folder`` with the fingerprint, atomically."""
    from triton.runtime.cache import triton_key

    root = install_root()
    assert root is not None  # triton imported above
    before = fingerprint(root)
    key = triton_key()
    if fingerprint(root) != before:  # rewritten while it was hashed: nothing remembered
        raise OSError(f"{root} changed while its key was computed; run it again")
    written = folder / f".{MEMO}.{os.getpid()}"
    written.write_text(json.dumps({"fingerprint": before, "key": key}))
    os.replace(written, folder / MEMO)
    return key
