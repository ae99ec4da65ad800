"""The vendor yardstick: the cache every report reads, the record a vendor run leaves, the column."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from harness.commands.main import main
from harness.contract.results import CaseResult, RunResult, Status, TimingStats
from harness.contract.task_spec import TaskError, load_task, parse_task, shape_text
from harness.display import report
from harness.display.progress import as_progress
from harness.judge import run
from harness.judge.passes import vendor_cache
from harness.judge.passes.vendor_yardstick import vendor_times

H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "vendor.json"
    monkeypatch.setenv(vendor_cache.CACHE_ENV, str(path))
    return path


def _timed(case: dict, median_us: float, status: Status = Status.PASSED, reason: str = "") -> CaseResult:
    stats = TimingStats(median_us, median_us, 0.0, median_us, median_us, median_us, median_us, 10, "test")
    return CaseResult("benchmark", case, status, reason, timing=stats if status == Status.PASSED else None)


def test_lookup_says_why_there_is_no_number(cache):
    gemm, gemv = load_task("nvfp4_gemm"), load_task("nvfp4_gemv")
    case = gemm.benchmarks[0]
    assert "no vendor library path" in vendor_cache.lookup(gemv, gemv.benchmarks[0], H100).note
    assert vendor_cache.lookup(gemm, case, "cpu").note == "vendor times need a GPU"
    assert vendor_cache.lookup(gemm, case, H100).note == vendor_cache.MEASURE_HINT
    vendor_cache.record(H100, "nvfp4_gemm", {shape_text(case): vendor_cache.VendorTime(12.5, "cuBLAS")})
    assert vendor_cache.lookup(gemm, case, H100) == vendor_cache.VendorTime(12.5, "cuBLAS")
    assert vendor_cache.lookup(gemm, case, "NVIDIA H200").note == vendor_cache.MEASURE_HINT


def test_a_vendor_that_cannot_run_here_is_recorded_with_its_verdict():
    task = load_task("nvfp4_gemm")
    first, second, third = task.benchmarks
    result = RunResult("nvfp4_gemm", "vendor.py", "", "benchmark", {"type": "cuda"}, "0", cases=[
        _timed(first, 20.0),
        _timed(second, 0.0, Status.UNSUPPORTED, "needs an sm_100 (Blackwell) GPU: cuBLAS has no NVFP4 below sm_100"),
    ])
    times = vendor_times(task, result)
    assert times[shape_text(first)].median_us == 20.0
    assert times[shape_text(second)].median_us is None and "needs an sm_100" in times[shape_text(second)].note
    assert times[shape_text(third)].median_us is None  # never run: the run's own status says why


def test_each_timed_case_gets_its_percent_of_vendor(cache):
    task = load_task("nvfp4_gemm")
    first, second, _ = task.benchmarks
    vendor_cache.record(H100, task.name, {shape_text(first): vendor_cache.VendorTime(10.0, "cuBLAS")})
    timed = [_timed(first, 20.0), _timed(second, 5.0)]
    run._beside_the_vendor(task, timed, H100, None)
    assert timed[0].vendor_us == 10.0 and timed[0].pct_of_vendor == pytest.approx(50.0)
    assert timed[1].pct_of_vendor is None and timed[1].vendor_note == vendor_cache.MEASURE_HINT
    result = RunResult(task.name, "x.py", "", "benchmark", {"type": "cuda", "name": H100}, "0", cases=timed)
    text = report.render(result)
    assert "% vendor" in text and "50.0" in text and "the vendor library's median on this GPU over yours" in text


def test_the_vendor_file_is_a_shipped_submission(tmp_path):
    task = load_task("nvfp4_gemm")
    assert task.vendor is not None and task.vendor.file.name == "scaled_mm_fp4.py"

    spec = yaml.safe_load((task.directory / "task.yml").read_text())
    spec["vendor"] = {"file": "problems/nvfp4_gemv/reference.py", "library": "cuBLAS"}
    with pytest.raises(TaskError, match=r"vendor\.file 'problems/nvfp4_gemv/reference\.py' is not a \.py file under"):
        parse_task(spec, task.directory)
    spec["vendor"] = "cublas"
    with pytest.raises(TaskError, match="vendor must be a mapping"):
        parse_task(spec, task.directory)
    assert replace(task, vendor=None).vendor is None


def test_calibrate_vendor_needs_a_gpu(capsys, tmp_path):
    code = main(["calibrate", "--device", "cpu", "--cache", str(tmp_path / "c.json"), "--vendor"])
    assert code == 110 and "vendor times need a CUDA GPU" in capsys.readouterr().err


def test_a_gpu_without_a_vendor_time_gets_it_measured_on_first_use_with_one_line(cache):
    """`eval` on a GPU whose vendor time is not cached measures it once (a stand-in measurement here),
    says so in one line, and the second run reads the cache; the CPU keeps its one-line reason."""
    task = load_task("nvfp4_gemm")
    first, second, _ = task.benchmarks
    measured = []

    def stand_in(task, device_name):
        measured.append(device_name)
        times = {shape_text(c): vendor_cache.VendorTime(10.0, "cuBLAS") for c in task.benchmarks}
        vendor_cache.record(device_name, task.name, times)
        return times

    lines: list[str] = []
    timed = [_timed(first, 20.0), _timed(second, 5.0)]
    run._beside_the_vendor(task, timed, H100, (as_progress(lines.append), stand_in))
    assert measured == [H100] and timed[0].pct_of_vendor == pytest.approx(50.0)
    assert len(lines) == 1 and lines[0].startswith(f"vendor: no {task.vendor.library} time for {H100} yet: measuring")
    again = [_timed(first, 20.0)]
    run._beside_the_vendor(task, again, H100, (as_progress(lines.append), stand_in))
    assert measured == [H100] and len(lines) == 1 and again[0].pct_of_vendor == pytest.approx(50.0)  # cached
    on_cpu = [_timed(first, 20.0)]
    run._beside_the_vendor(task, on_cpu, "cpu", (as_progress(lines.append), stand_in))
    assert measured == [H100] and on_cpu[0].vendor_note == "vendor times need a GPU" and len(lines) == 1
    unasked = [_timed(first, 20.0)]
    run._beside_the_vendor(task, unasked, "NVIDIA H200", None)  # the leaderboard's and the service's runs: never
    assert measured == [H100] and unasked[0].vendor_note == vendor_cache.MEASURE_HINT
