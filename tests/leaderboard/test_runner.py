"""The runner: discovery, authors, progress, cache and --force, isolation, one submission per GPU."""

import os
import subprocess
import threading
import time

import pytest

from harness import __version__
from harness.leaderboard import runner
from harness.leaderboard.store import Store
from harness.results import Status

from .samples import FakeEvaluate, make_run


def _write(root, relative, text="def custom_kernel(data):\n    return data[-1]\n"):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "submissions"
    _write(root, "nvfp4_gemv/fast.py", "#!POPCORN author Ada Lovelace\ndef custom_kernel(data):\n    return 1\n")
    _write(root, "nvfp4_gemv/slow.py", "#!POPCORN author bob\ndef custom_kernel(data):\n    return 2\n")
    _write(root, "nvfp4_gemv/broken.py", "#!POPCORN author eve\ndef custom_kernel(data):\n    return 3\n")
    _write(root, "nvfp4_gemm/raises.py", "#!POPCORN author mallory\n")
    _write(root, "nvfp4_gemv/__init__.py")
    _write(root, "nvfp4_gemv/.hidden/x.py")
    _write(root, "nvfp4_gemv/__pycache__/y.py")
    _write(root, "nvfp4_gemv/notes.txt")
    return root


def _results():
    return {
        "fast.py": make_run((10.0, 10.0, 10.0)),
        "slow.py": make_run((30.0, 30.0, 30.0)),
        "broken.py": make_run(None, status=Status.FAILED, reason="output mismatch at [0, 0, 0]"),
        "raises.py": RuntimeError("evaluator bug"),
    }


def test_discover_finds_python_files_per_problem(tree):
    found = runner.discover(tree, ["nvfp4_gemv", "nvfp4_gemm", "nvfp4_dual_gemm"])
    assert [s.label for s in found] == ["nvfp4_gemm/raises.py", "nvfp4_gemv/broken.py", "nvfp4_gemv/fast.py",
                                        "nvfp4_gemv/slow.py"]
    assert [s.author for s in found] == ["mallory", "eve", "Ada Lovelace", "bob"]
    assert all(len(s.sha256) == 64 and s.path.is_absolute() for s in found)
    assert runner.discover(tree, ["nvfp4_gemv"])[0].problem == "nvfp4_gemv"


def test_author_from_git_then_unknown(tmp_path):
    path = _write(tmp_path / "repo", "s.py")
    assert runner.read_author(path, path.read_text()) == "unknown"  # no repository here
    env = {**os.environ, "GIT_AUTHOR_NAME": "Grace Hopper", "GIT_AUTHOR_EMAIL": "g@example.com",
           "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com"}
    for command in (["git", "init", "-q"], ["git", "add", "s.py"], ["git", "commit", "-q", "-m", "add"]):
        subprocess.run(command, cwd=path.parent, env=env, check=True)
    assert runner.read_author(path, path.read_text()) == "Grace Hopper"
    assert runner.read_author(path, "#!POPCORN author  ada  \nx = 1\n") == "ada"  # the POPCORN line wins


def test_run_stores_every_run_and_survives_an_exception(tree, tmp_path):
    fake, lines = FakeEvaluate(_results()), []
    subs = runner.discover(tree, ["nvfp4_gemv", "nvfp4_gemm"])
    with Store.open(tmp_path / "lb.db") as store:
        outcomes = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", secret_seed=42,
                                  evaluate=fake, progress=lines.append)
        assert len(store.runs()) == 4
    assert [o.result.status for o in outcomes] == [Status.CRASHED, Status.FAILED, Status.PASSED, Status.PASSED]
    crashed = outcomes[0]
    assert crashed.harness_error and "RuntimeError: evaluator bug" in crashed.result.reason
    assert all(call["mode"] == "leaderboard" and call["secret_seed"] == 42 and call["device"] == "cuda"
               and call["visible_devices"] is None for call in fake.calls)
    text = "\n".join(lines)
    assert "[1/4] nvfp4_gemm/raises.py ... crashed: the evaluator raised RuntimeError: evaluator bug" in text
    assert "[3/4] nvfp4_gemv/fast.py ... passed 10.00 us geomean (" in text
    assert "[2/4] nvfp4_gemv/broken.py ... failed: output mismatch at [0, 0, 0]" in lines
    assert "      imported in 0.1 s; timing: fake" in lines  # the evaluator's own progress, indented


def test_cached_files_are_skipped_unless_forced(tree, tmp_path):
    subs = runner.discover(tree, ["nvfp4_gemv"])
    with Store.open(tmp_path / "lb.db") as store:
        first = FakeEvaluate(_results())
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", evaluate=first, progress=print)
        assert len(first.calls) == 3
        again, lines = FakeEvaluate(_results()), []
        outcomes = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", evaluate=again,
                                  progress=lines.append)
        assert not again.calls and all(o.cached for o in outcomes)
        assert "[2/3] nvfp4_gemv/fast.py ... cached: passed 10.00 us geomean" in "\n".join(lines)
        other_gpu = FakeEvaluate(_results())
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA H100", evaluate=other_gpu, progress=print)
        assert len(other_gpu.calls) == 3  # another device is another result
        forced = FakeEvaluate(_results())
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", force=True, evaluate=forced,
                       progress=print)
        assert len(forced.calls) == 3 and len(store.runs()) == 9


def test_an_evaluator_exception_is_retried_next_time(tree, tmp_path):
    subs = runner.discover(tree, ["nvfp4_gemm"])
    with Store.open(tmp_path / "lb.db") as store:
        for _ in range(2):
            fake = FakeEvaluate(_results())
            runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", evaluate=fake, progress=print)
            assert len(fake.calls) == 1


def test_a_non_result_is_recorded_as_crashed(tree, tmp_path):
    subs = runner.discover(tree, ["nvfp4_gemv"])[:1]
    with Store.open(tmp_path / "lb.db") as store:
        [outcome] = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200",
                                   evaluate=lambda *a, **k: "passed", progress=print)
    assert outcome.result.status == Status.CRASHED and "expected a RunResult" in outcome.result.reason


def test_one_submission_per_gpu_in_parallel(tree, tmp_path):
    in_flight, peak, lock = set(), [0], threading.Lock()

    def slow(result):
        def call(visible_devices, **options):
            gpu = visible_devices
            with lock:
                assert gpu not in in_flight, "two submissions on one GPU"
                in_flight.add(gpu)
                peak[0] = max(peak[0], len(in_flight))
            time.sleep(0.2)
            with lock:
                in_flight.discard(gpu)
            return result
        return call

    fake = FakeEvaluate({name: slow(result) if not isinstance(result, Exception) else result
                         for name, result in _results().items()})
    lines = []
    subs = runner.discover(tree, ["nvfp4_gemv", "nvfp4_gemm"])
    with Store.open(tmp_path / "lb.db") as store:
        outcomes = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", gpu_count=2,
                                  evaluate=fake, progress=lines.append)
        assert len(store.runs()) == 4
    assert {call["visible_devices"] for call in fake.calls} == {"0", "1"}
    assert peak[0] == 2
    assert [o.submission.label for o in outcomes] == [s.label for s in subs]  # input order kept
    assert "running 4 submissions in parallel, one per GPU on 2 GPUs" in lines
    assert any(line.startswith("      gpu") and "imported" in line for line in lines)


def test_cpu_runs_sequentially_and_says_not_rankable(tree, tmp_path):
    cpu = make_run((900.0, 800.0, 700.0), device_type="cpu", sol_us=None)
    fake, lines = FakeEvaluate({"fast.py": cpu, "slow.py": cpu, "broken.py": cpu}), []
    with Store.open(tmp_path / "lb.db") as store:
        runner.run_all(runner.discover(tree, ["nvfp4_gemv"]), store, device="cpu", device_name="cpu", gpu_count=4,
                       evaluate=fake, progress=lines.append)
    assert all(call["visible_devices"] is None for call in fake.calls)
    assert any(line.endswith("passed 795.8 us geomean; not rankable (cpu)") for line in lines)
    assert __version__
