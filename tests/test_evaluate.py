"""The evaluator end to end on the CPU: baselines pass, bad input gets one line and its exit code."""

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from harness.commands import eval_command
from harness.contract.messages import Rechecked
from harness.contract.results import ExitCode, Status
from harness.contract.task_spec import list_problems, load_task, shape_text
from harness.display.progress import as_progress
from harness.judge.run import evaluate_submission, scope_of, select_cases
from harness.judge.verdict import queued_sleep, wall_clock
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions
from harness.judge.worker_link import seal, worker_spawn
from harness.judge.worker_link.worker_channel import CallOutput, WorkerSession

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("problem", list_problems())
def test_torch_baseline_passes_every_cpu_case(problem):
    result = evaluate_submission(problem, REPO / "submissions" / problem / "torch_reference.py", MODES["test"], "cpu")
    assert result.status == Status.PASSED, result.reason
    assert result.cases and all(c.status == Status.PASSED for c in result.cases)
    assert result.author == "harness-baselines" and len(result.submission_sha256) == 64


def test_cpu_runs_small_shapes_and_says_what_it_left_out():
    task = load_task("nvfp4_gemm")
    cases, notes = select_cases(task, MODES["all"], "cpu")
    assert {shape_text(c) for c in task.cpu_tests} <= {shape_text(c) for _, c in cases}
    assert notes and "too large for the CPU" in notes[0]
    assert {kind for kind, _ in cases} == {"test"} and "timing needs a GPU" in notes[1]
    timed, _ = select_cases(task, MODES["benchmark"], "cpu")
    assert [c for _, c in timed] == [c for _, c in cases]  # CPU timing only when asked for
    gpu_cases, gpu_notes = select_cases(task, MODES["all"], "cuda")
    assert len(gpu_cases) == len(task.tests) + len(task.benchmarks) and not gpu_notes


def test_cpu_cases_never_repeat_a_shape_and_the_report_names_each_seed():
    """nvfp4_gemm's one contest test shape small enough for the CPU is also its first cpu_tests
    shape: the CPU runs it once, with the contest's seed, and says what it checks."""
    from harness.contract.results import CaseResult, RunResult
    from harness.display import report

    task = load_task("nvfp4_gemm")
    cases, notes = select_cases(task, MODES["test"], "cpu")
    shapes = [shape_text(c) for _, c in cases]
    assert len(shapes) == len(set(shapes)) == 2
    assert cases[-1][1] == task.tests[0] and cases[0][1] == task.cpu_tests[1]
    assert "9 of 10 contest test shapes are too large for the CPU" in notes[0]
    assert "checks the 1 that fits and 1 smaller shape of its own" in notes[0]
    run = RunResult("nvfp4_gemm", "s.py", "", "test", {"type": "cpu"}, "0", status=Status.PASSED,
                    cases=[CaseResult(k, c, Status.PASSED, "passed in 0.1 s") for k, c in cases])
    run.scope = scope_of(task, cases, "cpu")
    text = report.render(run)
    assert "m=256 n=256 k=768 l=1 seed=8" in text and "m=128 n=256 k=256 l=1 seed=1111" in text
    # The headline says how much of the contest that is, not "2/2".
    assert ("Correctness on the CPU: 2/2 shapes passed (1 of the contest's 10 test shapes + 1 smaller shape of its "
            "own, 2 calls each") in text
    assert "Result: PASS (exit code 0) on the CPU: 1 of the contest's 10 test shapes checked; no timing" in text


def test_the_quiet_report_keeps_the_organizers_lines_for_verbose():
    from harness.contract.results import CaseResult, RunResult, TimingStats
    from harness.display import report

    timing = TimingStats(10.0, 10.0, 0.1, 9.9, 10.2, 9.95, 10.1, 20, "cuda events")
    case = CaseResult("benchmark", {"m": 128, "k": 256, "l": 1}, Status.PASSED, timing=timing, overhead_ms=5.5,
                      overhead_split_ms={"exchange": 1.25}, worker_split_ms={"core": 0.5})
    run = RunResult("nvfp4_gemv", "s.py", "", "benchmark", {"type": "cuda", "name": "H100"}, "0",
                    status=Status.PASSED, cases=[case], geomean_us=10.0, wall_s={"timed": 1.0, "setup": 0.2})
    quiet, verbose = report.render(run), report.render(run, verbose=True)
    assert "Geometric mean: 10.00 us" in quiet and "Result: PASS (exit code 0)" in quiet
    for organizers in ("Wall time", "harness ms/call", "ms per timed call", "exchange 1.25"):
        assert organizers not in quiet and organizers in verbose


def _write(tmp_path, body, name="s.py"):
    path = tmp_path / name
    path.write_text(body)
    return path


def test_benchmark_on_cpu_is_timed_and_not_rankable(tmp_path):
    source = (REPO / "submissions/nvfp4_gemv/torch_reference.py").read_text()
    result = evaluate_submission(None, _write(tmp_path, source), MODES["benchmark"], "cpu")
    assert result.status == Status.PASSED, result.reason
    assert not result.rankable and result.geomean_us and result.geomean_us > 0
    timed = [c for c in result.cases if c.kind == "benchmark"]
    assert timed and all(c.timing.runs >= 3 and c.timing.method.startswith("wall clock") for c in timed)
    # Where the wall time went: the phases cover the run, and each timed call's split names its parts.
    phases = result.wall_s
    assert {"setup", "worker_start", "warmup", "timed", "close", "vendor", "other"} <= set(phases)
    assert "tests" not in phases
    assert sum(s for name, s in phases.items() if name in wall_clock.PHASES) == pytest.approx(result.elapsed_s,
                                                                                             abs=0.01)
    assert phases["timed"] > 0 and phases["submission_import"] <= phases["worker_start"]
    for case in timed:
        assert {"inputs_wait", "exchange", "draw", "check"} <= set(case.overhead_split_ms)
        assert {"scan", "core", "checks"} <= set(case.worker_split_ms)
        assert case.worker_split_ms["core"] >= case.timing.min_us / 1e3  # the core's call holds the timed one


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ("def custom_kernel(data)\n", Status.BAD_INPUT, "syntax error at line 1"),
        ("#!POPCORN leaderboard nvfp4_gemv\nx = 1\n", Status.BAD_INPUT, "defines no custom_kernel"),
        ("def custom_kernel(data):\n    return data[-1]\n", Status.BAD_INPUT, "no problem given"),
        ("#!POPCORN leaderboard nvfp4_conv\n", Status.BAD_INPUT, "unknown problem 'nvfp4_conv'"),
        ("#!POPCORN leaderboard nvfp4_gemv\nimport not_a_module\n", Status.BAD_INPUT, "pip install not_a_module"),
        ("#!POPCORN leaderboard nvfp4_gemv\nfrom utils import ceil_div\n", Status.BAD_INPUT,
         "the contest runner's utils module has no such name; define it in your submission"),
        ("#!POPCORN leaderboard nvfp4_gemv\ncustom_kernel = 3\n", Status.BAD_INPUT, "custom_kernel is a int, not a"),
        ("#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(data, extra):\n    return data[-1]\n", Status.BAD_INPUT,
         "custom_kernel(data, extra) must take one argument, the data tuple"),
        # Outputs the compiled core cannot copy: no segfault (meta), no harness traceback (sparse).
        ("#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(data):\n    return data[-1].to('meta')\n",
         Status.FAILED, "custom_kernel returned a tensor on meta; return it on cpu"),
        ("#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(data):\n    return [data[-1].to_sparse()]\n",
         Status.FAILED, "a tensor of layout torch.sparse_coo; return a dense (strided) tensor"),
    ],
)
def test_bad_input_is_one_clear_reason(tmp_path, body, status, needle):
    result = evaluate_submission(None, _write(tmp_path, body), MODES["test"], "cpu")
    assert result.status == status and needle in result.reason
    lines = result.reason.splitlines()  # one line; a syntax error adds the source line and a caret
    assert len(lines) == (3 if "syntax error" in needle else 1) and "Traceback" not in result.reason
    assert result.exit_code == (ExitCode.BAD_INPUT if status == Status.BAD_INPUT else ExitCode.CHECK_FAILED)


def test_a_problem_argument_and_a_popcorn_line_that_disagree_stop_before_any_worker(tmp_path, monkeypatch, capsys):
    from harness.judge.verdict import evaluation

    def no_worker(*args, **kwargs):
        raise AssertionError("a worker was started")

    monkeypatch.setattr(evaluation, "WorkerSession", no_worker)
    path = _write(tmp_path, "#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(data):\n    return data[-1]\n")
    result = evaluate_submission("nvfp4_gemm", path, MODES["test"], "cpu")
    assert result.status == Status.BAD_INPUT and result.exit_code == ExitCode.BAD_INPUT
    assert "'#!POPCORN leaderboard nvfp4_gemv'" in result.reason and "nvfp4_gemm" in result.reason
    assert "\n" not in result.reason
    from harness.commands.main import main

    assert main(["eval", "nvfp4_gemm", str(path), "--device", "cpu", "--mode", "test"]) == ExitCode.BAD_INPUT
    assert "nvfp4_gemv" in capsys.readouterr().out


def test_missing_gpu_is_a_device_failure(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible here")  # the GPU path is exercised by scripts/gpu_check.sh
    source = (REPO / "submissions/nvfp4_gemv/torch_reference.py").read_text()
    result = evaluate_submission(None, _write(tmp_path, source), MODES["test"], "cuda")
    assert result.exit_code == ExitCode.CUDA_FAILURE and "--device cpu" in result.reason


def test_cli_prints_a_table_writes_json_and_exits_with_the_status(tmp_path):
    out = tmp_path / "result.json"
    submission = REPO / "submissions/nvfp4_dual_gemm/torch_reference.py"
    run = subprocess.run(
        [sys.executable, "-m", "harness", "eval", str(submission), "--mode", "test", "--device", "cpu",
         "--json", str(out)],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Correctness on the CPU:" in run.stdout and "Result: PASS (exit code 0)" in run.stdout
    record = json.loads(out.read_text())
    assert record["problem"] == "nvfp4_dual_gemm" and record["exit_code"] == 0
    assert record["device"]["type"] == "cpu" and record["harness_version"]
    assert {c["status"] for c in record["cases"]} == {"passed"}
    # The CLI adds the process's own start (in the JSON); the quiet report leaves the organizer's lines out.
    assert 0 < record["wall_s"]["start"] < 120 and record["wall_s"]["tests"] > 0
    assert "Wall time " not in run.stdout and "sandbox:" not in run.stderr and "imported in" not in run.stderr
    assert "Result: PASS (exit code 0) on the CPU: 0 of the contest's 9 test shapes checked" in run.stdout


def test_cli_bad_input_exit_code(tmp_path):
    broken = _write(tmp_path, "#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(:\n")
    run = subprocess.run([sys.executable, "-m", "harness", "eval", str(broken), "--device", "cpu"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert run.returncode == ExitCode.BAD_INPUT
    assert "syntax error" in run.stdout and "Traceback" not in run.stdout + run.stderr
    assert "\n    def custom_kernel(:\n                      ^" in run.stdout  # the line, and a caret at the fault


def test_the_same_failure_twice_stops_the_run_unless_keep_going(tmp_path):
    path = _write(tmp_path, "#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(data):\n    return data[-1].zero_()\n")
    result = evaluate_submission(None, path, MODES["test"], "cpu")
    first, second, *rest = result.cases
    assert first.status == second.status == Status.FAILED and rest
    assert all(c.status == Status.NOT_RUN and "--keep-going runs them all" in c.reason for c in rest)
    assert result.status == Status.FAILED and result.reason == first.reason
    everything = evaluate_submission(None, path, MODES["test"], "cpu", RunOptions(keep_going=True))
    assert [c.status for c in everything.cases] == [Status.FAILED] * len(result.cases)


def test_a_fresh_worker_after_a_crash_is_not_announced_again(tmp_path):
    path = _write(tmp_path, "#!POPCORN leaderboard nvfp4_gemv\nimport os\ndef custom_kernel(data):\n    os._exit(3)\n")
    lines = []
    result = evaluate_submission(None, path, MODES["test"], "cpu", progress=lines.append)
    assert [c.status for c in result.cases[:2]] == [Status.CRASHED, Status.CRASHED]
    assert sum(line.startswith("imported in") for line in lines) == 1


def test_ranked_gpu_run_without_the_compiled_core_is_refused_in_one_line(monkeypatch):

    monkeypatch.setattr(seal, "sealed_core_built", lambda: False)
    result = evaluate_submission("nvfp4_gemv", Path("submissions/nvfp4_gemv/torch_reference.py"), MODES["leaderboard"],
                                 "cuda", RunOptions(secret_seed=1))
    assert result.status == Status.BAD_INPUT
    assert "ranked mode refused" in result.reason and "pip install -e ." in result.reason
    assert "\n" not in result.reason


def _benchmark_against(make_session):
    """One CPU benchmark case of the GEMV baseline driven against a scripted worker stand-in."""
    from harness.judge.verdict.evaluation import Evaluation

    task = load_task("nvfp4_gemv").with_timeouts_scaled(1.0)
    baseline = REPO / "submissions/nvfp4_gemv/torch_reference.py"
    evaluation = Evaluation(task, baseline, MODES["benchmark"], "cpu", RunOptions(), as_progress(None),
                            {"type": "cpu"})
    session = make_session(evaluation.reference)
    try:
        return evaluation.run_benchmark(session, dict(task.cpu_tests[0])), session
    finally:
        evaluation.close()


RAW_EVENT_US = 10.0
"""What every call's event pair reads in the stand-in: its time is this minus the overhead the core holds."""


class _RecheckingSession(WorkerSession):
    """The parent's own session (its recheck: MAC check, the in-use check, adoption) over a scripted core.

    Each recheck answers the next (fresh, spread) of ``rechecks``, signed under the run's key; the core
    adopts a consistent one no higher than its first plus 0.1 us (as sealed.c's recheck does), and each
    call's time is RAW_EVENT_US minus the overhead the core holds, the value its MAC covers."""

    def __init__(self, reference, rechecks, first_us=2.4):
        super().__init__(load_task("nvfp4_gemv"), REPO / "submissions/nvfp4_gemv/torch_reference.py", "cpu")
        self.reference, self.rechecks, self.timed_loops = reference, list(rechecks), 0
        self.worker.spawned = types.SimpleNamespace(key=os.urandom(worker_spawn.KEY_BYTES), process=None)  # no process
        self.sealed, self.overhead_us, self.core_us = True, first_us, first_us  # the worker's first measurement
        self.first_overhead_us = first_us
        self.subtracted = set()  # the overheads the calls' times subtracted
        self._nonce = b""

    def _request(self, request):
        self._nonce = request.nonce

    def _expect(self, kind, stage, timeout_s):
        fresh_us, spread_us = self.rechecks.pop(0)
        self.timed_loops += 1
        mac = seal.recheck_mac(self.worker.key, self._nonce, self.core_us, fresh_us, spread_us)
        answer = Rechecked(overhead_us=self.core_us, fresh_us=fresh_us, spread_us=spread_us, mac=mac)
        if (0.0 <= fresh_us <= seal.OVERHEAD_MAX_US and spread_us <= seal.OVERHEAD_SPREAD_MAX_US
                and fresh_us <= self.first_overhead_us + seal.OVERHEAD_RAISE_MAX_US):
            self.core_us = fresh_us
        return answer, None

    def call(self, case, sleep_us, stage, timeout_s, plain=False, buffers="", answered=None, staged=None,
             drawn_seed=None):
        assert self.core_us == self.overhead_us, "the call's MAC would not check: parent and core disagree"
        data = self.reference.generate_input(**case, device="cpu")
        if stage == "a timed call":
            self.subtracted.add(self.core_us)
        return CallOutput(time_us=RAW_EVENT_US - self.core_us, host_us=1.0, output=self.reference.ref_kernel(data),
                          unfinished=False)

    def prepare(self, case):
        pass  # inputs are drawn in call()


@pytest.mark.parametrize(("rechecks", "status", "loops"), [
    ([(2.5, 0.1), (2.6, 0.1)], Status.PASSED, 2),  # before the case, then after it
    ([(2.4, 0.1), (1.6, 0.1), (1.7, 0.1)], Status.PASSED, 3),  # moved once: measured again, then steady
    ([(2.4, 0.1), (1.6, 0.1), (0.8, 0.1)], Status.HARNESS_FAULT, 3),  # moved twice: the harness's fault
    ([(2.4, 0.1), (4.0, 0.1), (4.1, 0.1)], Status.HARNESS_FAULT, 3),  # a raise is never adopted: it stays moved
])
def test_an_overhead_that_moves_is_a_harness_fault_measured_again_never_the_submissions(rechecks, status, loops):
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, rechecks))
    assert outcome.status == status and session.timed_loops == loops
    if status == Status.HARNESS_FAULT:
        assert "nothing is blamed on the submission" in outcome.reason


def test_a_case_subtracts_the_overhead_measured_for_it_not_the_workers_first():
    # The worker's first measurement was unlucky (2.9 us); the case measures 2.2 us before its calls.
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [(2.2, 0.1), (2.3, 0.1)],
                                                                               first_us=2.9))
    assert outcome.status == Status.PASSED and session.subtracted == {2.2}
    assert outcome.event_overhead_us == 2.2 and outcome.timing.median_us == pytest.approx(RAW_EVENT_US - 2.2)


def test_a_case_never_subtracts_a_measurement_raised_above_the_workers_first():
    # A submission that keeps the GPU busy while the core measures lengthens the measurement; subtracting
    # it would shorten every timed call. The case keeps the first value (taken before the import).
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [(3.4, 0.1), (2.4, 0.1)],
                                                                               first_us=2.4))
    assert outcome.status == Status.PASSED and session.subtracted == {2.4}


@pytest.mark.parametrize("refused", [(2.2, 0.9), (11.0, 0.1), (-0.5, 0.1)])  # rounds disagree; out of bounds
def test_an_inconsistent_measurement_for_a_case_is_refused_and_measured_again(refused):
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [refused, (2.2, 0.1),
                                                                                           (2.3, 0.1)], first_us=2.9))
    assert outcome.status == Status.PASSED and session.subtracted == {2.2}  # never the refused value
    outcome, session = _benchmark_against(lambda reference: _RecheckingSession(reference, [refused] * 3, first_us=2.9))
    assert outcome.status == Status.HARNESS_FAULT and "refused" in outcome.reason and not session.subtracted


class _ExposingSession(_RecheckingSession):
    """Timed calls (not the warm-up) launch for 300 us: exposed until the queued sleep outlasts that."""

    def __init__(self, reference, always=False):
        super().__init__(reference, [(2.5, 0.1)] * 2)
        self.always = always

    def call(self, case, sleep_us, stage, timeout_s, plain=False, buffers="", answered=None, staged=None,
             drawn_seed=None):
        output = super().call(case, sleep_us, stage, timeout_s, plain, answered=answered)
        if stage != "a timed call":
            return output
        output.host_us = 300.0
        output.exposed = self.always or sleep_us < 300.0
        output.time_us = 999.0 if output.exposed else 5.0
        return output


@pytest.mark.parametrize("always", [False, True])
def test_exposed_calls_raise_the_sleep_and_never_count_until_the_retries_are_spent(always):

    outcome, _ = _benchmark_against(lambda reference: _ExposingSession(reference, always))
    assert outcome.status == Status.PASSED
    if always:  # a call that waits for the GPU inside: exposed at any sleep, accepted after the retries,
        # at the sleep it started with (a longer one would only cost wall time)
        assert outcome.exposed_calls > queued_sleep.EXPOSED_RETRIES and outcome.timing.max_us == 999.0
        assert outcome.queued_sleep_us < 620.0
    else:
        assert outcome.exposed_calls == 1 and outcome.timing.max_us == 5.0
        assert outcome.queued_sleep_us >= 620.0  # 2 x 300 us + the floor
    assert "exposed" in outcome.reason and {"draw", "check"} <= set(outcome.overhead_split_ms)


class _ClockSession(_RecheckingSession):
    """Timed calls carry a signed second-clock reading: each ``gaps_us[i % len]`` apart, 2 us allowed."""

    def __init__(self, reference, gaps_us):
        super().__init__(reference, [(2.4, 0.1), (2.4, 0.1)])  # before the case, after it
        self.gaps_us, self.timed = gaps_us, 0

    def call(self, case, sleep_us, stage, timeout_s, plain=False, buffers="", answered=None, staged=None,
             drawn_seed=None):
        output = super().call(case, sleep_us, stage, timeout_s, plain, answered=answered)
        if stage == "a timed call":
            gap = self.gaps_us[self.timed % len(self.gaps_us)]
            output.clock = seal.ClockReading(event_us=5.0, clock_us=5.5 + gap, gap_us=gap, allowance_us=2.0)
            self.timed += 1
        return output


@pytest.mark.parametrize(("gaps_us", "status"), [
    ([5.9] + [0.3] * 9, Status.PASSED),  # an isolated honest outlier (the H100's GEMV, one call in ~300)
    ([2.5], Status.REJECTED),  # a start event recorded again on every call
])
def test_the_parent_rejects_a_case_whose_calls_read_short_against_the_second_clock(gaps_us, status):
    outcome, _ = _benchmark_against(lambda reference: _ClockSession(reference, gaps_us))
    assert outcome.status == status
    if status == Status.REJECTED:
        assert "the GPU's own clock and the timer's events disagree on" in outcome.reason


@pytest.mark.parametrize(("options", "words"), [
    (["--json", "{tmp}"], "is a folder"),
    (["--json", "{tmp}/a_file/result.json"], "cannot be made"),
    (["--timeout-scale", "nan"], "must be a finite number above 0"),
    (["--timeout-scale", "inf"], "must be a finite number above 0"),
    (["--no-file"], "no submission file: python -m harness eval nvfp4_gemv path/to/submission.py"),
])
def test_bad_options_are_refused_before_the_run_in_one_line(tmp_path, capsys, options, words):
    """A bad --json path once cost a finished run its result (a traceback after the report)."""
    from harness.commands.main import main

    (tmp_path / "a_file").write_text("")
    argv = ["eval", "nvfp4_gemv", "submissions/nvfp4_gemv/torch_reference.py", "--device", "cpu"]
    if options == ["--no-file"]:
        argv, options = ["eval", "nvfp4_gemv", "--device", "cpu"], []
    assert main(argv + [option.format(tmp=tmp_path) for option in options]) == 113
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_ctrl_c_ends_the_run_with_one_line_and_130(monkeypatch, capsys, tmp_path):
    from harness.commands.main import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(eval_command, "evaluate_submission", interrupted)
    target = tmp_path / "r.json"
    assert main(["eval", "nvfp4_gemv", "submissions/nvfp4_gemv/torch_reference.py", "--json", str(target)]) == 130
    assert "interrupted" in capsys.readouterr().err and not target.exists()


@pytest.mark.parametrize("file", ["mxfp8_gemm/scaled_mm_mxfp8.py", "fp8_blockwise_gemm/scaled_mm.py"])
def test_the_fp8_vendor_baselines_are_unsupported_on_the_cpu(file):
    """torch has no block-scaled _scaled_mm on the CPU: one 'unsupported' line, not a crash."""
    if torch.cuda.is_available():
        pytest.skip("the CPU verdict needs a machine without a GPU")
    result = evaluate_submission(None, REPO / "submissions" / file, MODES["test"], "cpu")
    assert result.status == Status.UNSUPPORTED and result.exit_code == ExitCode.UNSUPPORTED, result.reason
    assert "this machine: CPU only" in result.reason and "\n" not in result.reason


WRITES_INTO_C = '''#!POPCORN leaderboard mxfp8_gemm
import torch


def custom_kernel(data):
    a, b, sfa, sfb, _, _, c = data
    c.copy_((a.float() * sfa.float().repeat_interleave(32, 1)) @ (b.float() * sfb.float().repeat_interleave(32, 1)).T)
    return c
'''


def test_a_submission_may_write_into_the_bf16_output_buffer(tmp_path):
    result = evaluate_submission(None, _write(tmp_path, WRITES_INTO_C), MODES["test"], "cpu")
    assert result.status == Status.PASSED, result.reason
