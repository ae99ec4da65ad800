"""Profile mode's Nsight Compute pass, on the CPU: the CSV parsing, the report, and the command
lines built (a stand-in `ncu` records them, runs the real worker and replays a recorded CSV)."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from harness.contract.results import CaseResult, KernelProfile, RunResult, Status
from harness.contract.task_spec import load_task
from harness.display import report
from harness.display.progress import as_progress
from harness.judge import run
from harness.judge.passes import nsight
from harness.judge.verdict.evaluation import Evaluation
from harness.judge.verdict.modes import MODES
from harness.judge.verdict.run_options import RunOptions

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests/data/ncu/gemv_raw.csv"


def test_the_raw_csv_gives_each_kernel_its_metrics_and_its_bound():
    fill, gemv, reduce = nsight.parse_raw_csv("==PROF== Disconnected\n" + FIXTURE.read_text())
    assert gemv == KernelProfile("_gemv_nvfp4_kernel", pytest.approx(41.792), 83.64, 27.18, 71.09, 40, "memory")
    # 3% DRAM and 42% SM: neither roof near (60%), so latency, with its occupancy; not "compute".
    assert reduce.bound == "latency (12% occupancy)" and reduce.duration_us == pytest.approx(2.528)
    assert fill.bound == "latency (39% occupancy)"
    assert fill.name.startswith("void at::native::vectorized_elementwise_kernel<4,") and fill.name.endswith("...")
    assert len(fill.name) == nsight.NAME_CHARS and "(" not in fill.name


@pytest.mark.parametrize(("dram", "sm", "occupancy", "bound"), [
    (83.6, 27.2, 71.1, "memory"), (16.0, 61.0, 50.0, "compute"), (60.0, 60.0, 50.0, "memory"),
    (16.0, 23.0, 12.4, "latency (12% occupancy)"), (59.9, 10.0, 88.0, "latency (88% occupancy)"),
])
def test_a_kernel_is_bound_by_a_roof_only_near_it_else_by_latency(dram, sm, occupancy, bound):
    assert nsight.bound_by(dram, sm, occupancy) == bound


def test_durations_in_other_units_are_converted_to_us():
    text = FIXTURE.read_text().replace('"nsecond"', '"usecond"')
    assert nsight.parse_raw_csv(text)[1].duration_us == pytest.approx(41792.0)


def test_a_csv_without_the_metrics_is_one_line_saying_so():
    with pytest.raises(nsight.NsightFailed, match="lacks the metrics"):
        nsight.parse_raw_csv('==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n')


def _stand_in_ncu(tmp_path: Path) -> Path:
    """An `ncu` that records how it was called: as a wrapper it writes the report and runs the
    worker; with --import it prints the recorded CSV."""
    path = tmp_path / "bin" / "ncu"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import os, sys
        args = sys.argv[1:]
        if "--import" in args:
            open({str(tmp_path / "import_argv.txt")!r}, "w").write("\\n".join(args))
            print(open({str(FIXTURE)!r}).read())
            sys.exit(0)
        open({str(tmp_path / "argv.txt")!r}, "w").write("\\n".join(args))
        open(args[args.index("--export") + 1], "w").write("a report")
        worker = args[args.index({sys.executable!r}):]
        os.execv(worker[0], worker)
        """))
    path.chmod(0o755)
    return path


def test_each_passed_shape_runs_in_a_worker_under_ncu_and_gets_its_kernels(tmp_path):
    ncu = _stand_in_ncu(tmp_path)
    assert nsight.find_ncu(str(ncu.parent)) == ncu
    task = load_task("nvfp4_gemv")
    evaluation = Evaluation(task, REPO / "submissions/nvfp4_gemv/torch_reference.py", MODES["profile"], "cpu",
                            RunOptions(), as_progress(None), {"type": "cpu"})
    shape = task.cpu_tests[0]
    results = [CaseResult("benchmark", shape, Status.PASSED), CaseResult("benchmark", task.cpu_tests[1], Status.FAILED)]
    try:
        notes = nsight.profile_cases(evaluation, results, ncu, tmp_path / "reports")
    finally:
        evaluation.close()
    assert notes == [] and [k.name for k in results[0].kernels][1:] == ["_gemv_nvfp4_kernel", "_gemv_reduce_kernel"]
    assert results[1].kernels is None  # a failed shape is not profiled
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[:5] == ["--target-processes", "all", "--profile-from-start", "off", "--metrics"]
    assert argv[5].split(",") == list(nsight.METRICS) and argv[6] == "--export" and "--force-overwrite" in argv
    # The GPU's own clocks, as in the timed run (ncu would otherwise lock them to base: 173 us against
    # 144), and every cache flushed before each kernel, as the harness flushes L2 before each call.
    assert argv[argv.index("--clock-control") + 1] == "none" and argv[argv.index("--cache-control") + 1] == "all"
    report_file = Path(argv[7])
    assert report_file.parent == tmp_path / "reports" and report_file.name.startswith("01_m=128")
    assert report_file.suffix == ".ncu-rep" and report_file.is_file()
    assert argv[argv.index("-c") - 1] == sys.executable  # the worker itself comes right after ncu's options
    imported = (tmp_path / "import_argv.txt").read_text().splitlines()
    assert imported[:6] == ["--import", str(report_file), "--csv", "--page", "raw", "--print-units"]


def test_without_ncu_or_a_gpu_one_line_says_so_and_nothing_runs(monkeypatch):
    monkeypatch.setattr(nsight, "find_ncu", lambda: None)
    result = RunResult("nvfp4_gemv", "s.py", "", "profile", {}, "0")
    notes = run._nsight_pass(None, result, "cuda", None)  # type: ignore[arg-type]
    assert len(notes) == 1 and "Nsight Compute (ncu) is not on PATH" in notes[0] and result.ncu_reports is None
    assert "on the CPU only torch.profiler" in run._nsight_pass(None, result, "cpu", None)[0]  # type: ignore[arg-type]


def test_the_report_shows_each_kernel_and_the_json_keeps_them():
    kernels = nsight.parse_raw_csv(FIXTURE.read_text())
    case = CaseResult("benchmark", {"m": 128, "k": 256, "l": 1, "seed": 1}, Status.PASSED, kernels=kernels,
                      profile="(torch.profiler table)")
    result = RunResult("nvfp4_gemv", "s.py", "", "profile", {"type": "cuda", "name": "NVIDIA H100"}, "0",
                       status=Status.PASSED, cases=[case], ncu_reports="/tmp/r.ncu")
    text = report.render(result)
    assert "Nsight Compute, one call of m=128 k=256 l=1" in text and "(torch.profiler table)" in text
    row = next(line for line in text.splitlines() if "_gemv_nvfp4_kernel" in line)
    assert row.split()[1:] == ["41.79", "83.6", "27.2", "71.1", "40", "memory"]
    reduce = next(line for line in text.splitlines() if "_gemv_reduce_kernel" in line)
    assert reduce.split()[-3:] == ["latency", "(12%", "occupancy)"]
    assert "clocks: the GPU's own, as in the timed calls (ncu --clock-control none)" in text
    assert "Nsight Compute reports (.ncu-rep, open in ncu-ui): /tmp/r.ncu" in text
    again = RunResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.cases[0].kernels == kernels and again.ncu_reports == "/tmp/r.ncu"
