"""The evaluator end to end on the CPU: baselines pass, bad input gets one line and its exit code."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.commands import eval_command
from harness.contract.results import ExitCode, Status
from harness.contract.task_spec import list_problems, load_task, shape_text
from harness.judge.run import evaluate_submission, scope_of, select_cases
from harness.judge.verdict import wall_clock
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions
from harness.judge.worker_link import seal

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


def test_a_contest_leaderboard_name_on_the_popcorn_line_runs_its_problem(tmp_path):
    """Contest files carry the leaderboard they were sent to, e.g. 'final_nvfp4_dual_gemm': they run unchanged."""
    source = ("#!POPCORN leaderboard final_nvfp4_gemv\nfrom reference import ref_kernel\n\n\n"
              "def custom_kernel(data):\n    return ref_kernel(data)\n")
    path = _write(tmp_path, source)
    for asked in (None, "nvfp4_gemv"):
        result = evaluate_submission(asked, path, MODES["test"], "cpu")
        assert (result.problem, result.status) == ("nvfp4_gemv", Status.PASSED), result.reason


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
