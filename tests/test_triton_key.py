"""The key of Triton's install remembered at install (harness/triton_key.py) and adopted by the harness's
processes (reference/triton_cache.py) instead of hashed again by each: what it is keyed on, when it is
dropped, and that a process given it computes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from harness import kernel_cache, triton_key
from harness.contract import cache_home
from harness.judge.worker_link.worker_spawn import worker_environment
from reference import triton_cache

REPO = Path(__file__).resolve().parents[1]


def fake_install(root: Path) -> Path:
    """A package folder with the files Triton's key reads."""
    library = f"libtriton.{sysconfig.get_config_var('EXT_SUFFIX').split('.')[-1]}"
    for relative in ("__init__.py", "runtime/cache.py", f"_C/{library}", "compiler/compiler.py",
                     "backends/nvidia/driver.py", "language/core.py"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(relative)
    return root


def test_the_fingerprint_moves_with_any_file_the_key_reads_and_only_then(tmp_path: Path) -> None:
    root = fake_install(tmp_path / "triton")
    first = triton_key.fingerprint(root)
    assert triton_key.fingerprint(root) == first
    (root / "notes.txt").write_text("not read by the key")
    assert triton_key.fingerprint(root) == first
    for relative in ("backends/nvidia/driver.py", "__init__.py"):
        before = triton_key.fingerprint(root)
        status = (root / relative).stat()
        os.utime(root / relative, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000))
        assert triton_key.fingerprint(root) != before, relative
    before = triton_key.fingerprint(root)
    (root / "language" / "extra.py").write_text("a module added")
    assert triton_key.fingerprint(root) != before


def test_remembered_is_tritons_own_key_until_the_install_changes(tmp_path: Path) -> None:
    from triton.runtime.cache import triton_key as computed

    assert triton_key.remembered(tmp_path) is None, "nothing remembered yet"
    key = triton_key.remember(tmp_path)
    assert key == computed() and key.startswith(__import__("triton").__version__)
    assert triton_key.remembered(tmp_path) == key
    memo = json.loads((tmp_path / triton_key.MEMO).read_text())
    (tmp_path / triton_key.MEMO).write_text(json.dumps({**memo, "fingerprint": "another install"}))
    assert triton_key.remembered(tmp_path) is None, "a key of another install is never given"
    (tmp_path / triton_key.MEMO).write_text("{not json")
    assert triton_key.remembered(tmp_path) is None


def test_a_process_given_the_key_adopts_it_and_never_hashes_triton(tmp_path: Path) -> None:
    """In a fresh process: the harness's kernels' preparation adopts the key everywhere Triton holds it,
    and Triton's own hashing (its lru-cached function) is never called."""
    code = """
import sys
from triton.runtime import autotuner, cache
original = cache.triton_key
from reference.triton_cache import prepare_triton
prepare_triton()
print(cache.triton_key(), autotuner.triton_key(), original.cache_info().misses,
      'remembered-key' in cache.get_cache_key.__globals__['triton_key']())
"""
    env = {**os.environ, triton_cache.TRITON_KEY: "remembered-key", "TRITON_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["remembered-key", "remembered-key", "0", "True"]


def test_without_the_variable_nothing_is_adopted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(triton_cache.TRITON_KEY, raising=False)
    from triton.runtime import cache

    before = cache.triton_key
    triton_cache.adopt_remembered_key()
    assert cache.triton_key is before


def test_the_parent_names_a_remembered_key_to_itself_and_its_workers_and_drops_any_other(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TRITON_CACHE_DIR", cache_home.HARNESS_KERNELS, cache_home.TRITON_KEY):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(kernel_cache, "cache_home", lambda: tmp_path / "home")
    monkeypatch.setenv(cache_home.TRITON_KEY, "set by someone else")
    folder = kernel_cache.enable()
    assert folder is not None and cache_home.TRITON_KEY not in os.environ, "none remembered: none named"
    monkeypatch.setattr(triton_key, "remembered", lambda where: "the install's key" if where == folder else None)
    kernel_cache.enable()
    assert os.environ[cache_home.TRITON_KEY] == "the install's key"
    assert worker_environment("cuda", None)[cache_home.TRITON_KEY] == "the install's key", (
        "named to the worker although NVFP4_ settings are dropped")


def test_the_harness_and_the_reference_name_one_variable() -> None:
    assert cache_home.TRITON_KEY == triton_cache.TRITON_KEY
