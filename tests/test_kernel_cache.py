"""The parent's Triton cache where its workers may read it (harness/kernel_cache.py), and the rule for
every folder whose contents the parent runs (harness/contract/cache_home.py: evaluators_folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import kernel_cache
from harness.contract.cache_home import HARNESS_KERNELS, evaluators_folder
from harness.judge.worker_link.worker_spawn import worker_environment


def test_a_folder_of_the_harness_is_made_0755_and_another_owners_refused(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "made" / "here"
    assert evaluators_folder(folder, make=True)
    folder.chmod(0o777)
    assert evaluators_folder(folder, make=True)
    assert folder.stat().st_mode & 0o777 == 0o755, "no one else may write what the parent runs"
    monkeypatch.setattr(os, "geteuid", lambda: folder.stat().st_uid + 1)
    assert not evaluators_folder(folder, make=True)


def test_a_folder_the_user_named_is_only_looked_at(tmp_path: Path) -> None:
    folder = tmp_path / "named"
    assert not evaluators_folder(folder, make=False), "missing: not made"
    folder.mkdir()
    folder.chmod(0o775)
    assert not evaluators_folder(folder, make=False), "others may write it"
    assert folder.stat().st_mode & 0o777 == 0o775, "left as the user set it"
    folder.chmod(0o755)
    assert evaluators_folder(folder, make=False)


@pytest.fixture
def no_triton_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TRITON_CACHE_DIR", HARNESS_KERNELS):  # recorded, so that what enable() sets is undone after
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(kernel_cache, "cache_home", lambda: tmp_path / "home")
    return tmp_path


def test_the_parents_triton_cache_moves_into_the_harness_cache_and_workers_are_told(
        no_triton_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = kernel_cache.enable()
    assert folder == no_triton_cache / "home" / "triton" and folder.is_dir()
    assert os.environ["TRITON_CACHE_DIR"] == os.environ[HARNESS_KERNELS] == str(folder)
    env = worker_environment("cuda", None)
    assert env[HARNESS_KERNELS] == str(folder), "named to the worker although NVFP4_ settings are dropped"


def test_a_triton_cache_others_may_write_is_kept_for_the_parent_but_never_named_to_workers(
        no_triton_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = no_triton_cache / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(shared))
    assert kernel_cache.enable() is None
    assert os.environ["TRITON_CACHE_DIR"] == str(shared)
    assert HARNESS_KERNELS not in worker_environment("cuda", None)
