"""The parent's Triton cache where its workers may read it (harness/kernel_cache.py), and the rule for
every folder whose contents the parent runs (harness/contract/cache_home.py: evaluators_folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from harness import kernel_cache
from harness.contract.cache_home import HARNESS_KERNELS, TRITON_KEY, evaluators_folder
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
    for name in ("TRITON_CACHE_DIR", HARNESS_KERNELS, TRITON_KEY):  # recorded: what enable() sets is undone after
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


def test_warm_kernels_runs_every_shape_of_a_problem_through_draw_reference_and_check() -> None:
    """On the CPU (no Triton kernel there, the same loop): every CPU-sized shape drawn, computed and checked."""
    assert kernel_cache.warm_kernels(["nvfp4_gemv", "nvfp4_group_gemm"], ("cpu_tests",),
                                     torch.device("cpu")) == ["nvfp4_gemv", "nvfp4_group_gemm"]


def test_a_problem_this_device_cannot_run_is_passed_over_in_one_line(monkeypatch, capsys) -> None:
    import problems.nvfp4_gemm.reference as gemm_reference

    def refuse(**case):
        raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED\nand more")

    monkeypatch.setattr(gemm_reference, "generate_input", refuse)
    warmed = kernel_cache.warm_kernels(["nvfp4_gemm", "nvfp4_gemv"], ("cpu_tests",), torch.device("cpu"))
    assert warmed == ["nvfp4_gemv"]
    assert capsys.readouterr().out == ("kernels: nvfp4_gemm not compiled ahead (RuntimeError: "
                                       "CUBLAS_STATUS_NOT_SUPPORTED)\n")


def test_without_a_gpu_nothing_is_compiled(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert kernel_cache.warm_kernels() == []


def test_python_m_harness_warm_says_what_it_wrote_and_exits_0() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "harness.warm"], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1],
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 2
    assert lines[0].startswith("bytecode: ") and lines[1].startswith("kernels: no CUDA GPU here")
