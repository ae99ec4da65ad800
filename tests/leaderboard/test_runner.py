"""The runner: discovery, authors, progress, cache and --force, isolation, longest first."""

import dataclasses
import os
import subprocess
import time

import pytest

from harness import __version__
from harness.contract.results import Status
from harness.execution.eval_job import EvalJob, HarnessFailure
from harness.judge import run
from harness.leaderboard import runner
from harness.leaderboard.store import Store

from .samples import FakeEvaluate, make_run, sha


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


@pytest.fixture
def install(monkeypatch):
    """Put a FakeEvaluate where run_job finds the evaluator; return it."""

    def put(results):
        fake = FakeEvaluate(results)
        monkeypatch.setattr(run, "evaluate_submission", fake)
        return fake

    return put


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


def test_run_stores_every_run_and_survives_an_exception(tree, tmp_path, install):
    fake, lines = install(_results()), []
    subs = runner.discover(tree, ["nvfp4_gemv", "nvfp4_gemm"])
    with Store.open(tmp_path / "lb.db") as store:
        outcomes = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", secret_seed=42,
                                  progress=lines.append)
        assert len(store.runs()) == 4
        assert [run.harness_error for run in store.runs()] == [True, False, False, False]
    assert [o.result.status for o in outcomes] == [Status.CRASHED, Status.FAILED, Status.PASSED, Status.PASSED]
    crashed = outcomes[0]
    assert crashed.harness_error and isinstance(crashed.result, HarnessFailure)
    assert "RuntimeError: evaluator bug at samples.py:" in crashed.result.reason
    assert all(call["mode"].name == "leaderboard" and call["options"].secret_seed == 42 and call["device"] == "cuda"
               and call["options"].visible_devices is None for call in fake.calls)
    assert sorted(call["submission"].name for call in fake.calls) == ["broken.py", "fast.py", "raises.py", "slow.py"]
    assert all(call["submission"].parent != tree for call in fake.calls)  # the job's bytes, in a private folder
    text = "\n".join(lines)
    assert "running 4 submission(s) on NVIDIA B200, longest first" in lines
    assert "[1/4] nvfp4_gemm/raises.py ... crashed: the evaluator raised RuntimeError: evaluator bug" in text
    assert "[3/4] nvfp4_gemv/fast.py ... passed 10.00 us geomean (" in text
    assert "[2/4] nvfp4_gemv/broken.py ... failed: output mismatch at [0, 0, 0]" in lines
    assert "      nvfp4_gemv/fast.py: started" in lines
    assert "      imported in 0.1 s; timing: fake" in lines  # the evaluator's own progress, indented


def test_each_files_verdict_is_printed_before_the_next_file_starts(tree, tmp_path, install):
    """The plain log once printed a file's verdict after the next file's 'started' line: the serial
    executor began the next job while the runner was still storing the last one (slow here)."""
    install(_results())
    lines: list[str] = []
    subs = runner.discover(tree, ["nvfp4_gemv", "nvfp4_gemm"])
    with Store.open(tmp_path / "lb.db") as store:
        add = store.add

        def slow_add(*args, **kwargs):
            time.sleep(0.3)
            return add(*args, **kwargs)

        store.add = slow_add
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=lines.append)
    events = [line.split()[0] if line.startswith("[") else line.strip() for line in lines
              if line.startswith("[") or line.endswith(": started")]
    started = [i for i, line in enumerate(events) if line.endswith(": started")]
    verdicts = [i for i, line in enumerate(events) if line.startswith("[")]
    assert len(started) == len(verdicts) == 4
    assert all(s < v < next_s for s, v, next_s in zip(started, verdicts, [*started[1:], len(events)])), events


def test_cached_files_are_skipped_unless_forced(tree, tmp_path, install):
    subs = runner.discover(tree, ["nvfp4_gemv"])
    with Store.open(tmp_path / "lb.db") as store:
        first = install(_results())
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=print)
        assert len(first.calls) == 3
        again, lines = install(_results()), []
        outcomes = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=lines.append)
        assert not again.calls and all(o.cached for o in outcomes)
        assert "[2/3] nvfp4_gemv/fast.py ... cached: passed 10.00 us geomean" in "\n".join(lines)
        other_gpu = install(_results())
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA H100", progress=print)
        assert len(other_gpu.calls) == 3  # another device is another result
        forced = install(_results())
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", force=True, progress=print)
        assert len(forced.calls) == 3 and len(store.runs()) == 9


def test_an_evaluator_exception_is_retried_next_time(tree, tmp_path, install):
    subs = runner.discover(tree, ["nvfp4_gemm"])
    with Store.open(tmp_path / "lb.db") as store:
        for _ in range(2):
            fake = install(_results())
            runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=print)
            assert len(fake.calls) == 1


def test_a_harness_fault_is_the_harnesss_record_and_the_entry_is_run_again(tree, tmp_path, install):
    """A run that ends harness_fault (the timing core could not start, the overhead moved twice) says
    nothing about the entry: stored as a harness error, listed as not run, evaluated again next time."""
    subs = runner.discover(tree, ["nvfp4_gemv"])
    fault = make_run(None, status=Status.HARNESS_FAULT, reason="the timing core could not start")
    with Store.open(tmp_path / "lb.db") as store:
        install({**_results(), "fast.py": fault})
        outcomes = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=print)
        assert [(o.submission.path.name, o.harness_error) for o in outcomes if o.harness_error] == [("fast.py", True)]
        assert [run.harness_error for run in store.runs() if run.result.status == Status.HARNESS_FAULT] == [True]
        again = install(_results())
        outcomes = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=print)
        assert [call["submission"].name for call in again.calls] == ["fast.py"]  # only the faulted entry
        assert not any(o.harness_error for o in outcomes)


def test_a_non_result_is_recorded_as_crashed(tree, tmp_path, install):
    subs = runner.discover(tree, ["nvfp4_gemv"])[:1]
    install({"broken.py": lambda **options: "passed"})
    with Store.open(tmp_path / "lb.db") as store:
        [outcome] = runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=print)
    assert outcome.result.status == Status.CRASHED and "expected a RunResult" in outcome.result.reason


def test_longest_first_from_stored_durations(tree, tmp_path, install):
    """Known files by their own last duration, unknown problems first, others by their problem's median."""
    subs = runner.discover(tree, ["nvfp4_gemv", "nvfp4_gemm"])
    by_name = {s.path.name: s for s in subs}
    with Store.open(tmp_path / "lb.db") as store:
        for name, elapsed in (("fast.py", 5.0), ("slow.py", 50.0), ("fast.py", 7.0)):
            run = dataclasses.replace(make_run(), elapsed_s=elapsed)
            store.add(run, problem="nvfp4_gemv", submission_path=name, sha256=by_name[name].sha256, author="a",
                      device_name="NVIDIA H100")
        store.add(dataclasses.replace(make_run(), elapsed_s=999.0), problem="nvfp4_gemv", submission_path="x.py",
                  sha256=sha("x"), author="a", device_name="NVIDIA H100", harness_error=True)  # never counts
        expected = runner.expected_durations(store, subs)
        fake = install(_results())
        runner.run_all(subs, store, device="cuda", device_name="NVIDIA B200", progress=print)
    assert expected[("nvfp4_gemv", by_name["fast.py"].sha256)] == 7.0
    assert expected[("nvfp4_gemv", by_name["slow.py"].sha256)] == 50.0
    assert expected[("nvfp4_gemv", by_name["broken.py"].sha256)] == 7.0  # the median of 5, 50, 7
    assert expected[("nvfp4_gemm", by_name["raises.py"].sha256)] is None
    order = [call["submission"].name for call in fake.calls]
    assert order == ["raises.py", "slow.py", "broken.py", "fast.py"]  # a tie keeps discovery order


def test_longest_first_keeps_ties_in_order():
    jobs = [EvalJob(str(i), "p", f"{i}.py", b"", expected_s=s) for i, s in enumerate((1.0, None, 3.0, 1.0))]
    assert [job.key for job in runner.longest_first(jobs)] == ["1", "2", "0", "3"]


def test_cpu_runs_say_not_rankable(tree, tmp_path, install):
    cpu = make_run((900.0, 800.0, 700.0), device_type="cpu", sol_us=None)
    fake, lines = install({"fast.py": cpu, "slow.py": cpu, "broken.py": cpu}), []
    with Store.open(tmp_path / "lb.db") as store:
        runner.run_all(runner.discover(tree, ["nvfp4_gemv"]), store, device="cpu", device_name="cpu",
                       progress=lines.append)
    assert all(call["options"].visible_devices is None and call["device"] == "cpu" for call in fake.calls)
    assert any(line.endswith("passed 795.8 us geomean; not rankable (cpu)") for line in lines)
    assert __version__
