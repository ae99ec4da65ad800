"""The worker's CUDA context begun on a thread beside torch's import: only where the parent asked for a
context ahead, harmless without a driver, and joined (no harness thread left) before Start."""

from __future__ import annotations

import threading

from harness.worker import compile_ahead, cuda_context, worker_args


def test_only_eval_s_own_worker_makes_a_context_ahead(monkeypatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(cuda_context.threading.Thread, "start", lambda thread: started.append(thread.name))
    assert not cuda_context.start("-"), "a blank worker kept for a later file: another run may be timing"
    assert not cuda_context.start("cpu")
    assert started == []
    assert cuda_context.start("cuda")
    assert started == ["nvfp4-cuda-context"]
    cuda_context._AHEAD.clear()


def test_no_driver_ends_the_thread_quietly(monkeypatch) -> None:
    monkeypatch.setattr(cuda_context, "DRIVER", "libno_such_cuda_driver.so.1")
    assert cuda_context.start("cuda")
    cuda_context.join()
    assert not [t for t in threading.enumerate() if t.name == "nvfp4-cuda-context"]


def test_the_head_start_joins_it_before_anything_else(monkeypatch) -> None:
    """ahead_of_start waits for the thread before torch's first CUDA call and before Start comes."""
    order: list[str] = []
    monkeypatch.setattr(cuda_context, "join", lambda: order.append("join"))
    monkeypatch.setattr(compile_ahead, "warm_cuda", lambda: order.append("warm_cuda") or None)
    monkeypatch.setattr(compile_ahead, "draw_kernels", lambda capability: order.append("kernels"))
    argv = ["0", "1", "2", "none", "4", "-", "cuda", "-", "-", "-", "-"]
    assert worker_args.ahead_device(argv) == "cuda"
    compile_ahead.ahead_of_start(argv, 0.0)
    assert order == ["join", "warm_cuda"]
    order.clear()
    compile_ahead.ahead_of_start(argv[:6], 0.0)  # no device word: no context ahead, still joined
    assert order == ["join"]
