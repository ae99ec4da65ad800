"""Compile caches (Triton, torch inductor, load_inline) kept per owner between runs, never shared.

A contestant's second `eval` of a file skips Triton's cold compile (about 3.3 s of its first
test on an H100, docs/results.md run 11) when the worker finds the first run's cache. The cache
is keyed by its owner: the submission's path for `harness eval`, the author or user on a
leaderboard or the service. Owners never share a folder: a cache entry is code the next worker
loads and runs, so a shared one would let one author's poisoned entry run in another's worker,
and let one author read another's kernels (docs/security.md, "Compile caches").

Each owner's folder is named by an HMAC of the owner under a salt only the evaluator reads, inside
a root that others may search but not list: a worker (every worker is uid 65534 when the
evaluator is root) cannot find another owner's folder. The worker may write anywhere under the
root only until its Start request, which narrows its Landlock rules to the one folder before the
submission exists (``harness.worker.sandbox.narrow_writes``). Nothing of the harness's own lives
in the root: the salt sits beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from harness.contract.cache_home import cache_home
from harness.judge.worker_link import worker_confinement

ENV = "NVFP4_COMPILE_CACHE"
"""The evaluator's choice of root ("off": no cache kept between runs, each worker compiles afresh)."""
FOLDERS = {"TRITON_CACHE_DIR": "triton", "TORCHINDUCTOR_CACHE_DIR": "inductor", "TORCH_EXTENSIONS_DIR": "extensions"}
"""The variables each compiler reads its cache folder from, and the subfolder each gets."""
SALT_BYTES = 32


def environment(folder: Path) -> dict[str, str]:
    """The worker's cache variables, every compiler's folder under ``folder``."""
    return {name: str(folder / sub) for name, sub in FOLDERS.items()}


def default_root() -> Path | None:
    """``$NVFP4_COMPILE_CACHE``; else the harness's cache folder's ``compile`` (harness/contract/cache_home.py:
    /var/cache/nvfp4-harness/compile as root). None when turned off."""
    chosen = os.environ.get(ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    return cache_home() / "compile"


def root_for(drop_to_uid: int | None) -> Path | None:
    """The root, made (searchable by others, not listable), or None where it cannot be made or a
    worker running as ``drop_to_uid`` could not reach it: then each worker compiles in its own folder."""
    root = default_root()
    if root is None:
        return None
    try:
        root.mkdir(parents=True, exist_ok=True)
        if root.stat().st_uid == os.geteuid():
            root.chmod(0o711)
        if drop_to_uid is not None and worker_confinement.blocked_at(root) is not None:
            return None
    except OSError:
        return None
    return root.resolve()


def _salt(root: Path) -> bytes:
    """The evaluator's salt for folder names, beside the root (never in it), made once, 0600."""
    path = root.parent / f"{root.name}.salt"
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(secrets.token_bytes(SALT_BYTES))
    salt = path.read_bytes()
    if len(salt) != SALT_BYTES:
        raise OSError(f"{path}: not a salt of {SALT_BYTES} bytes; remove it")
    return salt


def owner_variables(root: Path, owner: str, drop_to_uid: int | None) -> dict[str, str]:
    """The cache variables of ``owner``'s folder under ``root``, every folder made and given to the
    worker's uid; empty where they cannot be made (the worker then compiles in its own folder).

    The uid is part of the name: a folder written by a worker that kept the evaluator's uid is
    never handed to one that dropped to 65534 (it could not write there)."""
    try:
        uid = os.geteuid() if drop_to_uid is None else drop_to_uid
        folder = root / hmac.new(_salt(root), f"{uid}\0{owner}".encode(), hashlib.sha256).hexdigest()[:40]
        variables = environment(folder)
        for path in (folder, *map(Path, variables.values())):
            path.mkdir(mode=0o700, exist_ok=True)
            if drop_to_uid is not None:
                os.chown(path, drop_to_uid, drop_to_uid)
    except OSError:
        return {}
    return variables
