"""A blank worker's draw kernels compiled before its file comes (harness/worker/compile_ahead.py): the
parent names the GPU's capability, the worker answers Triton's driver with it and restores it after."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import types

import pytest

from harness.judge.worker_link import worker_spawn
from harness.worker import compile_ahead, worker_args


def test_the_capability_travels_in_the_worker_argv_and_dash_means_none():
    argv = ["3", "4", "5", "steps", "6", "-", "-", "-", "-", "-"]
    assert worker_args.ahead_capability(argv) is None
    assert worker_args.ahead_capability([*argv, "-"]) is None
    assert worker_args.ahead_capability([*argv, "90"]) == 90


def test_the_parent_names_a_capability_only_where_it_already_runs_cuda(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert worker_spawn.ahead_capability("cuda") == "-"  # harness eval's prestart: no torch yet
    cuda = types.SimpleNamespace(is_initialized=lambda: True, get_device_capability=lambda device: (9, 0))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda, device=lambda name: name))
    assert worker_spawn.ahead_capability("cuda:0") == "90"
    assert worker_spawn.ahead_capability("cpu") == "-"
    cuda.is_initialized = lambda: False
    assert worker_spawn.ahead_capability("cuda") == "-"


def test_the_driver_answers_the_capability_then_asks_torch_again(monkeypatch):
    pytest.importorskip("triton")
    from triton.runtime import driver

    class Driver:
        def __init__(self) -> None:
            self.get_current_device = lambda: "torch's"

    real = Driver()
    monkeypatch.setattr(type(driver), "active", property(lambda _: real))
    with compile_ahead.answered_driver(100) as active:
        assert (active.get_current_device(), active.get_current_stream(0), active.get_device_capability(0)) == (
            0, 0, (10, 0))
    assert real.get_current_device() == "torch's"
    assert not hasattr(real, "get_current_stream") and not hasattr(real, "get_device_capability")


def test_a_failed_compile_is_left_to_start(monkeypatch):
    monkeypatch.setattr(compile_ahead, "answered_driver", lambda capability: (_ for _ in ()).throw(OSError("no ptxas")))
    compile_ahead.draw_kernels(90)  # raises nothing
    assert compile_ahead.COMPILED == []
    compile_ahead.load()  # nothing to load


def test_evals_own_worker_compiles_for_the_gpu_it_warmed_and_a_blank_one_for_the_parents(monkeypatch):
    compiled = []
    monkeypatch.setattr(compile_ahead, "draw_kernels", compiled.append)
    monkeypatch.setattr(compile_ahead, "warm_cuda", lambda: 90)
    argv = ["3", "4", "5", "steps", "6", "-", "cuda", "-", "-", "-", "-"]
    compile_ahead.ahead_of_start(argv, time.perf_counter())
    assert compiled == [90], "eval's worker: its own context's capability"
    seconds = compile_ahead.ahead_of_start([*argv[:6], "-", "-", "-", "-", "100"], time.perf_counter() - 2)
    assert compiled == [90, 100], "a blank worker kept ahead: the parent's"
    assert seconds["ahead"] >= 2 > seconds["ahead_kernels"] >= 0, "from its entry; the kernels' part"
    monkeypatch.setattr(compile_ahead, "warm_cuda", lambda: None)
    compile_ahead.ahead_of_start(argv, time.perf_counter())
    compile_ahead.ahead_of_start([*argv[:6], "-", "-", "-", "-", "-"], time.perf_counter())
    assert compiled == [90, 100], "no context and no capability named: nothing compiled ahead"


def test_the_draw_kernels_are_looked_for_in_the_parents_cache_first_then_built_in_the_workers_own(
        monkeypatch, tmp_path):
    from problems.shared import draw_kernels

    parent, own = str(tmp_path / "parent"), str(tmp_path / "own")
    monkeypatch.setattr(compile_ahead, "FOUND_IN", [None])  # the module's record, restored after
    monkeypatch.setenv("TRITON_CACHE_DIR", own)
    monkeypatch.setenv(compile_ahead.HARNESS_KERNELS, parent)
    monkeypatch.setattr(compile_ahead, "answered_driver", lambda capability: contextlib.nullcontext())
    tried = []

    def compile_all(missing_in_parent: bool):
        tried.append(os.environ["TRITON_CACHE_DIR"])
        if missing_in_parent and os.environ["TRITON_CACHE_DIR"] == parent:
            raise PermissionError("the parent's cache is read-only to a worker")
        return [types.SimpleNamespace(_init_handles=lambda: loaded.append(os.environ["TRITON_CACHE_DIR"]))]

    loaded = []
    monkeypatch.setattr(draw_kernels, "compile_all", lambda: compile_all(missing_in_parent=False))
    compile_ahead.draw_kernels(90)
    assert tried == [parent] and os.environ["TRITON_CACHE_DIR"] == own, "found in the parent's, own restored"
    compile_ahead.load()
    assert loaded == [parent], "the launcher is loaded from where it was found"
    assert os.environ["TRITON_CACHE_DIR"] == own
    tried.clear(), loaded.clear()
    monkeypatch.setattr(draw_kernels, "compile_all", lambda: compile_all(missing_in_parent=True))
    compile_ahead.draw_kernels(90)
    compile_ahead.load()
    assert tried == [parent, own] and loaded == [own], "a miss in the parent's: built in the worker's own"
    monkeypatch.delenv(compile_ahead.HARNESS_KERNELS)
    tried.clear()
    compile_ahead.draw_kernels(90)
    compile_ahead.load()
    assert tried == [own], "no parent's cache named: the worker's own only"


def test_the_driver_is_made_with_the_parents_cache_named(monkeypatch, tmp_path):
    """Triton's driver, made on its first use inside answered_driver, builds its C module in the cache named
    at that moment: the parent's, where it was built at install, not the worker's empty one."""
    from problems.shared import draw_kernels

    parent = str(tmp_path / "parent")
    monkeypatch.setattr(compile_ahead, "FOUND_IN", [None])
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "own"))
    monkeypatch.setenv(compile_ahead.HARNESS_KERNELS, parent)
    named_at_driver = []

    @contextlib.contextmanager
    def answered_driver(capability):
        named_at_driver.append(os.environ["TRITON_CACHE_DIR"])
        yield

    monkeypatch.setattr(compile_ahead, "answered_driver", answered_driver)
    monkeypatch.setattr(draw_kernels, "compile_all", lambda: [])
    compile_ahead.draw_kernels(90)
    assert named_at_driver == [parent]
