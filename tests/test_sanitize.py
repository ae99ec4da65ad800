"""Sanitize mode on the CPU: the command that wraps the worker, recorded H100 reports turned into
one-line verdicts, addresses told relative to the inputs, and the mode's one-line refusals.

The fixtures in tests/data/sanitizer/ are real compute-sanitizer 2025.3.1 (CUDA 13.0) logs of the
planted defects in tests/sanitize/ and of the Triton GEMV baseline, recorded on an H100
(docs/sanitize.md). End to end, a stand-in compute-sanitizer replays a fixture into --log-file
and runs the real worker it wraps.
"""

import os
import re
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from harness.contract.results import ExitCode, Status
from harness.contract.task_spec import load_task
from harness.display.progress import as_progress
from harness.judge import run
from harness.judge.passes import sanitize
from harness.judge.run import evaluate_submission
from harness.judge.verdict.evaluation import Evaluation
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "data" / "sanitizer"
GEMV_C = sanitize.Placement("c (128,1,1) float16", 0x7FEECE40A000, 256)  # the allocation memcheck names


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# -- the command ----------------------------------------------------------------------------
def test_command_wraps_the_worker_with_one_tool_a_log_file_and_no_caching_allocator(tmp_path):
    exe, log = Path("/opt/cuda/bin/compute-sanitizer"), tmp_path / "1-memcheck.log"
    command = sanitize.sanitizer_command(exe, "memcheck", log)
    assert command[:3] == ["env", "PYTORCH_NO_CUDA_MEMORY_CACHING=1", str(exe)]
    pairs = dict(zip(command[3::2], command[4::2]))
    assert pairs == {"--tool": "memcheck", "--log-file": str(log), "--print-limit": str(sanitize.PRINT_LIMIT),
                     "--show-backtrace": "device", "--padding": str(sanitize.PADDING_BYTES)}
    racecheck = sanitize.sanitizer_command(exe, "racecheck", log)
    assert racecheck[racecheck.index("--racecheck-report") + 1] == "all" and "--padding" not in racecheck
    with pytest.raises(ValueError, match="unknown compute-sanitizer tool 'asan'"):
        sanitize.sanitizer_command(exe, "asan", log)
    assert sanitize.tools_for("all") == sanitize.TOOLS and sanitize.tools_for("initcheck") == ("initcheck",)


def _executable(path: Path, body: str = "#!/bin/sh\n") -> Path:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_sanitizer_found_by_variable_then_path_then_the_toolkit(tmp_path, monkeypatch):
    named = _executable(tmp_path / "my-sanitizer")
    assert sanitize.find_sanitizer({sanitize.SANITIZER_ENV: str(named), "PATH": ""}) == named
    on_path = _executable((tmp_path / "bin").mkdir() or tmp_path / "bin" / "compute-sanitizer")
    assert sanitize.find_sanitizer({"PATH": str(tmp_path / "bin")}) == on_path
    monkeypatch.setattr(sanitize, "CUDA_BIN", tmp_path / "bin")
    assert sanitize.find_sanitizer({"PATH": str(tmp_path / "empty")}) == on_path


def test_missing_sanitizer_is_one_line_naming_the_toolkit_and_the_variable(tmp_path, monkeypatch):
    monkeypatch.setattr(sanitize, "CUDA_BIN", tmp_path)
    with pytest.raises(sanitize.SanitizerMissing) as missing:
        sanitize.find_sanitizer({"PATH": str(tmp_path)})
    assert "CUDA toolkit" in str(missing.value) and sanitize.SANITIZER_ENV in str(missing.value)
    with pytest.raises(sanitize.SanitizerMissing, match="is not an executable file"):
        sanitize.find_sanitizer({sanitize.SANITIZER_ENV: str(tmp_path / "nope")})


# -- recorded reports into verdicts -----------------------------------------------------------
def test_memcheck_out_of_bounds_write_told_past_the_end_of_c():
    text = fixture("memcheck_oob_write.log")
    finding = sanitize.first_finding(text, "memcheck")
    assert finding is not None and not finding.is_consequence  # the launch failures that follow are not first
    assert sanitize.verdict_line(finding, [GEMV_C], sanitize.error_count(text)) == (
        "memcheck: Invalid __global__ write of size 2 bytes in kernel write_past_end, thread (0,0,0) in block "
        "(0,0,0), 12 bytes past the end of c (128,1,1) float16 (3 errors in the report)")


def test_memcheck_past_an_allocation_that_is_no_input_says_so():
    finding = sanitize.first_finding(fixture("memcheck_oob_write.log"), "memcheck")
    line = sanitize.verdict_line(finding, [], None)
    assert line.endswith("12 bytes past the end of an allocation of 256 bytes at 0x7feece40a000, none of the "
                         "inputs (the submission's own)")


def test_racecheck_hazard_names_both_threads_and_the_shared_address():
    text = fixture("racecheck_shared_race.log")
    line = sanitize.verdict_line(sanitize.first_finding(text, "racecheck"), [GEMV_C], sanitize.error_count(text))
    assert line == ("racecheck: Potential RAW hazard detected in kernel shared_race, Write Thread (32,0,0) at "
                    "shared_race+0xa0 and Read Thread (0,0,0) at shared_race+0xb0, __shared__ 0x480 in block (0,0,0) "
                    "(1025 errors in the report)")


def test_initcheck_read_of_the_submissions_own_buffer():
    text = fixture("initcheck_uninit_read.log")
    line = sanitize.verdict_line(sanitize.first_finding(text, "initcheck"), [GEMV_C], sanitize.error_count(text))
    assert line == ("initcheck: Uninitialized __global__ memory read of size 4 bytes in kernel read_unwritten, "
                    "thread (64,0,0) in block (0,0,0), address 0x7f64c740a300, in none of the inputs (memory the "
                    "submission allocated) (256 errors in the report)")


def test_synccheck_divergent_barrier():
    text = fixture("synccheck_divergent_barrier.log")
    line = sanitize.verdict_line(sanitize.first_finding(text, "synccheck"), [GEMV_C], sanitize.error_count(text))
    assert line == ("synccheck: Barrier error detected. Divergent thread(s) in warp in kernel divergent_barrier, "
                    "thread (0,0,0) in block (0,0,0) (16 errors in the report)")


def _saved_sections(text: str) -> list[tuple[str, list[sanitize.Placement], str]]:
    """(shape, inputs, log) per section of a saved report (the '#### inputs:' line as the worker told it)."""
    sections = []
    for chunk in text.split("#### test ")[1:]:
        head, inputs, log = chunk.split("\n", 2)
        where = [sanitize.Placement(m.group(1), int(m.group(2), 16), int(m.group(3))) for m in re.finditer(
            r"(\w+ \([\d,]+\) \w+) at (0x[0-9a-f]+) \((\d+) bytes\)", inputs)]
        sections.append((head.split(":")[0], where, log))
    return sections


def test_saved_report_of_a_whole_cli_run_gives_the_same_line_for_every_shape():
    """The 9 GEMV test shapes of one H100 run; on the larger ones memcheck writes sizes as '9,728'."""
    sections = _saved_sections(fixture("memcheck_oob_write_9_shapes.sanitizer.txt"))
    assert len(sections) == 9
    for shape, where, log in sections:
        line = sanitize.verdict_line(sanitize.first_finding(log, "memcheck"), where, sanitize.error_count(log))
        c = where[-1].label
        assert line.endswith(f"12 bytes past the end of {c} (3 errors in the report)"), (shape, line)


@pytest.mark.parametrize("tool", sanitize.TOOLS)
def test_clean_reports_have_no_finding(tool):
    text = fixture(f"clean_{tool}.log")
    assert sanitize.first_finding(text, tool) is None and sanitize.error_count(text) == 0


def test_a_lone_api_error_is_reported_when_nothing_else_explains_it():
    text = "========= COMPUTE-SANITIZER\n========= Program hit cudaErrorInvalidValue (error 1) on CUDA API call " \
           "to cudaMemcpy.\n========= \n========= ERROR SUMMARY: 1 error\n"
    finding = sanitize.first_finding(text, "memcheck")
    assert finding is not None and finding.is_consequence and finding.what.startswith("Program hit cudaErrorInvalid")


# -- addresses --------------------------------------------------------------------------------
A = sanitize.Placement("a (128,128,1) float4_e2m1fn_x2", 0x1000, 0x2000)


@pytest.mark.parametrize(
    ("address", "allocation", "told"),
    [
        (0x1028, None, "byte 40 of a (128,128,1) float4_e2m1fn_x2 (8192 bytes)"),
        (0x3000, (0x1000, 0x2000), "right past the end of a (128,128,1) float4_e2m1fn_x2"),
        (0x3010, (0x1000, 0x2000), "16 bytes past the end of a (128,128,1) float4_e2m1fn_x2"),
        (0x0FF8, (0x1000, 0x2000), "8 bytes before the start of a (128,128,1) float4_e2m1fn_x2"),
        (0x9000, None, "address 0x9000, in none of the inputs (memory the submission allocated)"),
    ],
)
def test_address_told_relative_to_the_input_it_falls_in_or_next_to(address, allocation, told):
    assert sanitize.describe_address(address, [A], allocation) == told


def test_inputs_named_from_the_tasks_data_contract():
    names = sanitize.input_names(load_task("nvfp4_gemv"))
    assert names == ["a", "b", "sfa", "sfb", "sfa_permuted", "sfb_permuted", "c"]
    reported = [{"index": i, "start": 4096 * i, "nbytes": 16, "shape": [4, 2], "dtype": "uint8"} for i in range(7)]
    assert sanitize.placements(reported, names)[6] == sanitize.Placement("c (4,2) uint8", 6 * 4096, 16)
    assert sanitize.placements(reported[:3], names)[0].label == "data[0] (4,2) uint8"  # names do not fit: positions
    assert sanitize.placements([{"index": "x"}], names) == []  # a malformed entry is dropped, not trusted


# -- the mode ---------------------------------------------------------------------------------
def test_sanitize_mode_on_a_cpu_is_one_line_and_bad_input(tmp_path):
    result = evaluate_submission("nvfp4_gemv", REPO / "submissions/nvfp4_gemv/torch_reference.py", MODES["sanitize"],
                                 "cpu")
    assert result.status == Status.UNSUPPORTED and result.exit_code == ExitCode.UNSUPPORTED
    assert result.reason.startswith("needs a CUDA GPU:") and "\n" not in result.reason and not result.cases


def test_sanitize_mode_without_compute_sanitizer_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv(sanitize.SANITIZER_ENV, str(tmp_path / "missing"))
    result = evaluate_submission("nvfp4_gemv", REPO / "submissions/nvfp4_gemv/torch_reference.py", MODES["sanitize"],
                                 "cuda")
    assert result.status == Status.UNSUPPORTED and sanitize.SANITIZER_ENV in result.reason and not result.cases


def test_sanitize_selects_every_test_shape_once():
    from harness.judge.run import select_cases

    task = load_task("nvfp4_gemm")
    cases, _ = select_cases(task, MODES["sanitize"], "cuda")
    assert cases == [("test", c) for c in task.tests]


def _stand_in_sanitizer(tmp_path: Path, replay: str) -> Path:
    """A compute-sanitizer that records its arguments, writes a recorded log and runs the worker."""
    return _executable(tmp_path / "compute-sanitizer", textwrap.dedent(f"""\
        #!{sys.executable}
        import os, sys
        args = sys.argv[1:]
        open({str(tmp_path / "argv.txt")!r}, "w").write("\\n".join(args))
        log = args[args.index("--log-file") + 1]
        while args[0].startswith("--"):
            args = args[2:]
        open(log, "w").write(open({str(FIXTURES / replay)!r}).read())
        os.execv(args[0], args)
        """))


def _run_sanitized(tmp_path: Path, submission: Path, replay: str):
    task = load_task("nvfp4_gemv").with_timeouts_scaled(1.0)
    evaluation = Evaluation(task, submission, MODES["sanitize"], "cpu", RunOptions(), as_progress(None),
                            {"type": "cpu"})
    try:
        results, log = sanitize.run(evaluation, [("test", task.cpu_tests[0])], _stand_in_sanitizer(tmp_path, replay),
                                    ("memcheck",))
    finally:
        evaluation.close()
    return results, log, (tmp_path / "argv.txt").read_text().splitlines()


def test_worker_runs_under_the_sanitizer_and_a_finding_fails_the_case(tmp_path):
    baseline = REPO / "submissions/nvfp4_gemv/torch_reference.py"
    results, log, argv = _run_sanitized(tmp_path, baseline, "memcheck_oob_write.log")
    assert argv[:2] == ["--tool", "memcheck"] and argv[argv.index("-c") - 1] == sys.executable
    assert [r.status for r in results] == [Status.FAILED]
    assert results[0].reason.startswith("memcheck: Invalid __global__ write of size 2 bytes in kernel write_past_end")
    assert "none of the inputs" in results[0].reason  # the replayed address is not where this worker's inputs are
    assert "#### inputs: a (128,128,1) float4_e2m1fn_x2 at 0x" in log and "Access to 0x7feece40a10c" in log


def test_clean_report_and_a_correct_output_pass(tmp_path):
    results, _, _ = _run_sanitized(tmp_path, REPO / "submissions/nvfp4_gemv/torch_reference.py", "clean_memcheck.log")
    assert [(r.status, r.reason) for r in results] == [(Status.PASSED, "clean under memcheck")]


def test_a_call_that_raises_under_the_sanitizer_is_reported_by_its_exit(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def custom_kernel(data):\n    raise RuntimeError('boom')\n")
    results, _, _ = _run_sanitized(tmp_path, broken, "clean_memcheck.log")
    assert results[0].status == Status.CRASHED and "exited with code 3" in results[0].reason
    assert results[0].reason.endswith("(no finding by memcheck)")


def test_the_saved_report_sits_beside_the_json(tmp_path, monkeypatch):

    stand_in = _stand_in_sanitizer(tmp_path, "clean_memcheck.log")
    monkeypatch.setattr(run, "_sanitizer_for", lambda device, tool: stand_in)
    monkeypatch.setattr(sanitize, "run", lambda evaluation, cases, exe, tools: ([], "#### recorded\n"))
    path = tmp_path / "out" / "r.sanitizer.txt"
    result = evaluate_submission("nvfp4_gemv", REPO / "submissions/nvfp4_gemv/torch_reference.py", MODES["sanitize"],
                                 "cpu", RunOptions(sanitizer_report=path))
    assert result.sanitizer_report == str(path) and path.read_text() == "#### recorded\n"
    assert os.path.isfile(result.sanitizer_report)


def test_the_sanitized_worker_starts_without_the_compiled_core(tmp_path, monkeypatch):
    # The core's graph-based start fails under compute-sanitizer (H100, 2026-11-26); a sanitized call is plain.
    asked = []
    session = Evaluation.session

    def spy(self, *args, **kwargs):
        asked.append(kwargs.get("unsealed"))
        return session(self, *args, **kwargs)

    monkeypatch.setattr(Evaluation, "session", spy)
    results, _, _ = _run_sanitized(tmp_path, REPO / "submissions/nvfp4_gemv/torch_reference.py", "clean_memcheck.log")
    assert asked == [True] and [r.status for r in results] == [Status.PASSED]


def test_the_log_folder_is_handed_to_unprivileged_workers(tmp_path, monkeypatch):
    """compute-sanitizer runs as the worker's user: a root evaluator's uid 65534 must be able to write its log."""
    handed = []
    monkeypatch.setattr(sanitize.os, "chown", lambda path, uid, gid: handed.append((str(path), uid, gid)))
    monkeypatch.setattr(sanitize.worker_spawn, "workers_run_unprivileged", lambda: True)
    sanitize.hand_to_workers(tmp_path)
    assert handed == [(str(tmp_path), 65534, -1)]
    handed.clear()
    monkeypatch.setattr(sanitize.worker_spawn, "workers_run_unprivileged", lambda: False)
    sanitize.hand_to_workers(tmp_path)
    assert handed == []


def test_a_log_is_read_from_a_plain_file_only(tmp_path):
    log = tmp_path / "1-memcheck.log"
    assert sanitize.read_log(log) == "(no log written)\n"
    log.write_text("")
    assert sanitize.read_log(log) == "(no log written)\n"
    log.write_text("========= ERROR SUMMARY: 0 errors\n")
    assert sanitize.read_log(log) == "========= ERROR SUMMARY: 0 errors\n"
    fifo = tmp_path / "3-memcheck.log"
    os.mkfifo(fifo)  # a pipe planted by the worker must not hang the evaluator
    assert sanitize.read_log(fifo) == "(no log written: not a plain file)\n"


def test_a_log_swapped_for_a_link_is_not_followed(tmp_path):
    secret = tmp_path / "root-only.txt"
    secret.write_text("not for the report")
    link = tmp_path / "2-memcheck.log"
    link.symlink_to(secret)
    assert sanitize.read_log(link) == "(no log written)\n"
