"""The physics floor, the rerun's comparison, the profiler's clock, sanitize's verdict and the dynamic
checks' seam, on canned RunResults (no GPU: the runner is a stand-in)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from harness.contract.results import KernelProfile, Status
from harness.execution.eval_job import EvalJob, HarnessFailure
from harness.review import clock_check, dynamic_checks, physics_floor, reproduce
from harness.review.dynamic_checks import DeviceSetup, Subject
from harness.review.findings import Flag, FlagClass, Verdict, verdict_of
from harness.review.sanitize_verdict import sanitize_flags
from harness.sol import calibration, fidelity
from harness.sol.fidelity import FidelityPoint
from tests.leaderboard.samples import GEMV_SHAPES, make_run

H100 = "NVIDIA H100 80GB HBM3"


def classes(flags: list[Flag]) -> list[FlagClass]:
    return [f.klass for f in flags]


# -- physics floor ---------------------------------------------------------------------------
def test_an_honest_run_is_above_the_floor():
    assert physics_floor.physics_flags(make_run((20.0, 40.0, 10.0)), "stored run") == ([], [])


def test_a_shape_faster_than_the_speed_of_light_is_flagged():
    flags, _ = physics_floor.physics_flags(make_run((20.0, 40.0, 2.0)), "stored run")  # SOL of shape 3: 4.317 us
    assert FlagClass.PHYSICS_FLOOR in classes(flags)
    assert any("below the speed of light" in f.evidence and "m=7168 k=2048 l=4" in f.evidence for f in flags)


def test_one_shape_far_out_of_line_with_the_others_is_flagged():
    """Shape 3 at 86% of SOL, the others near 11%: under the light, but 8x its peers."""
    flags, _ = physics_floor.physics_flags(make_run((80.0, 160.0, 5.0)), "fresh run")
    assert [f.evidence.split(":")[0] for f in flags] == ["fresh run, m=7168 k=2048 l=4"]
    assert "geometric mean of its other shapes" in flags[0].evidence


def test_without_speed_of_light_figures_the_floor_says_it_did_not_run():
    flags, notes = physics_floor.physics_flags(make_run((20.0, 40.0, 10.0), sol_us=None), "stored run")
    assert flags == [] and "not run" in notes[0]


# -- the fresh ranked run against the stored one ---------------------------------------------
def stored_run(medians=(20.0, 40.0, 10.0)):
    return make_run(medians, device=H100)


def test_a_fresh_run_inside_the_spread_reproduces():
    flags, notes, summary = reproduce.compare(stored_run(), 1, stored_run((20.4, 40.6, 10.1)), [30.0, 50.0])
    assert flags == [] and notes == [] and summary["rank"] == 1


def test_a_fresh_run_outside_the_spread_that_loses_its_rank_is_flagged():
    flags, _, summary = reproduce.compare(stored_run(), 1, stored_run((60.0, 120.0, 30.0)), [30.0, 50.0])
    assert classes(flags) == [FlagClass.RERUN] and summary["rank"] == 3
    assert "rank 1 does not reproduce" in flags[0].evidence
    assert verdict_of(flags) == Verdict.REPRODUCES_NOT


def test_outside_the_spread_at_the_same_rank_still_reproduces_the_rank():
    flags, _, _ = reproduce.compare(stored_run(), 1, stored_run((24.0, 48.0, 12.0)), [30.0, 50.0])
    assert flags == []


def test_a_fresh_run_that_fails_does_not_reproduce():
    failed = make_run(None, status=Status.FAILED, reason="call 3 output mismatch", device=H100)
    flags, _, _ = reproduce.compare(stored_run(), 1, failed, [])
    assert classes(flags) == [FlagClass.RERUN] and "mismatch" in flags[0].evidence


@pytest.mark.parametrize("status", [Status.UNSUPPORTED, Status.BAD_INPUT, Status.HARNESS_FAULT])
def test_a_fresh_run_the_harness_could_not_make_is_a_note_not_a_flag(status):
    flags, notes, _ = reproduce.compare(stored_run(), 1, make_run(None, status=status, reason="why"), [])
    assert flags == [] and "not made" in notes[0]


def test_a_harness_failure_is_never_blamed_on_the_entry():
    job = EvalJob(key="k", problem="nvfp4_gemv", filename="a.py", source=b"")
    from harness.execution.eval_job import harness_failure

    failure = harness_failure(job, "the evaluator raised")
    assert isinstance(failure, HarnessFailure)
    flags, notes, _ = reproduce.compare(stored_run(), 1, failure, [])
    assert flags == [] and notes


def test_rank_among_shares_ties():
    assert reproduce.rank_among(10.0, [5.0, 10.0, 20.0]) == 2


# -- the independent clock -------------------------------------------------------------------
def profiled(kernel_us: float | list[float], device: str = H100):
    run = make_run((20.0, 40.0, 10.0), device=device)
    per_shape = kernel_us if isinstance(kernel_us, list) else [kernel_us] * len(GEMV_SHAPES)
    for case, us in zip([c for c in run.cases if c.kind == "benchmark"], per_shape):
        case.kernels = [KernelProfile("gemv", us, 80.0, 20.0, 50.0, 64, "memory")]
    return run


@pytest.fixture
def calibrated(tmp_path, monkeypatch):
    """The H100 calibrated: its fidelity record (harness vs graph replay on two rungs) in a private cache."""
    path = tmp_path / "calibration.json"
    monkeypatch.setenv(calibration.CACHE_ENV, str(path))
    path.write_text(json.dumps({"format": 1, "devices": {H100: {"device": "cuda"}}}))
    points = [FidelityPoint("n=65536", 1.9, 2.1), FidelityPoint("n=5046272", 20.5, 20.0)]
    calibration.store_entry(H100, fidelity.RECORD_KEY, fidelity.entry(points, "test"), path)


def test_clocks_that_agree_give_no_flag(calibrated):
    assert clock_check.clock_flags(stored_run(), profiled([18.0, 38.0, 9.0])) == ([], [])


def test_a_harness_clock_well_under_the_kernels_time_is_flagged(calibrated):
    """Shape 3's 10 us median against 30 us of kernels: work escaped the timer."""
    flags, _ = clock_check.clock_flags(stored_run(), profiled([18.0, 38.0, 30.0]))
    assert classes(flags) == [FlagClass.CLOCK] and "m=7168 k=2048 l=4" in flags[0].evidence
    assert "fidelity bound" in flags[0].evidence and "max(0.20 us, 2.5%)" in flags[0].evidence


def test_the_calibrated_bound_sets_the_threshold(calibrated):
    """20 us of kernels: honest down to 20 - max(1.3, 8%) - max(0.2, 2.5%) = 17.9 us, flagged under it."""
    assert clock_check.clock_flags(stored_run((18.0, 40.0, 10.0)), profiled([20.0, 38.0, 9.0]))[0] == []
    flags, _ = clock_check.clock_flags(stored_run((17.8, 40.0, 10.0)), profiled([20.0, 38.0, 9.0]))
    assert classes(flags) == [FlagClass.CLOCK]


def test_a_harness_clock_above_the_kernels_time_is_not_a_flag(calibrated):
    assert clock_check.clock_flags(stored_run(), profiled([2.0, 4.0, 1.0]))[0] == []


def test_a_gpu_never_calibrated_falls_back_and_says_why():
    flags, notes = clock_check.clock_flags(stored_run(), profiled([18.0, 38.0, 30.0], device="NVIDIA B200"))
    assert "never calibrated" in flags[0].evidence and "0.60x" in flags[0].evidence
    assert any("never calibrated" in note and "calibrate" in note for note in notes)


def test_the_profiler_runs_at_the_harness_clocks_and_cache_policy(tmp_path):
    from harness.judge.passes import nsight

    prefix = nsight.profile_prefix(tmp_path / "ncu", tmp_path / "r.ncu-rep")
    assert prefix[prefix.index("--clock-control") + 1] == "none"
    assert prefix[prefix.index("--cache-control") + 1] == "all"


def test_no_kernel_time_is_a_note():
    flags, notes = clock_check.clock_flags(stored_run(), make_run((20.0, 40.0, 10.0), reason="ncu not found"))
    assert flags == [] and "ncu not found" in notes[0]


# -- sanitize ------------------------------------------------------------------------------------
def test_a_sanitizer_finding_is_a_flag_and_a_missing_sanitizer_a_note():
    run = make_run(None, status=Status.FAILED, reason="memcheck: Invalid __global__ write of size 2")
    assert classes(sanitize_flags(run)[0]) == [FlagClass.SANITIZE]
    missing = make_run(None, status=Status.UNSUPPORTED, reason="needs compute-sanitizer")
    assert sanitize_flags(missing) == ([], ["sanitize: not run (unsupported: needs compute-sanitizer)"])
    assert sanitize_flags(make_run(None)) == ([], [])


# -- the seam ------------------------------------------------------------------------------------
class StandIn:
    """A runner with canned results per mode; records the jobs it was given."""

    def __init__(self, by_mode):
        self.by_mode, self.jobs = by_mode, []

    def __call__(self, job: EvalJob):
        self.jobs.append(job)
        return self.by_mode[job.mode]


def subject(**changes):
    base = Subject("nvfp4_gemv", "a.py", b"def custom_kernel(data):\n    return data[-1]\n", stored_run(), H100, 1,
                   [30.0, 50.0])
    return dataclasses.replace(base, **changes)


def test_the_dynamic_checks_run_through_the_one_execution_path(calibrated):
    runner = StandIn({"leaderboard": stored_run((60.0, 120.0, 30.0)), "profile": profiled([18.0, 38.0, 30.0]),
                      "sanitize": make_run(None, status=Status.FAILED, reason="racecheck: hazard")})
    flags, notes, summary = dynamic_checks.run_checks(DeviceSetup(runner, H100, gpu="1"), subject())
    assert [j.mode for j in runner.jobs] == ["leaderboard", "profile", "sanitize"]
    assert all(j.source == subject().source and j.device == "cuda" for j in runner.jobs)
    assert runner.jobs[0].secret_seed is not None and runner.jobs[1].secret_seed is None
    assert classes(flags) == [FlagClass.RERUN, FlagClass.CLOCK, FlagClass.SANITIZE]
    assert summary["gpu"] == "1" and summary["rank"] == 3 and notes == []


def test_each_review_gets_a_new_secret():
    runner = StandIn({"leaderboard": stored_run(), "profile": profiled(18.0), "sanitize": make_run(None)})
    device = DeviceSetup(runner, H100)
    for _ in range(2):
        dynamic_checks.run_checks(device, subject(), skip=("clock", "sanitize"))
    assert runner.jobs[0].secret_seed != runner.jobs[1].secret_seed


def test_another_gpu_model_runs_sanitize_only_and_says_why():
    runner = StandIn({"sanitize": make_run(None)})
    flags, notes, _ = dynamic_checks.run_checks(DeviceSetup(runner, "NVIDIA B200"), subject())
    assert [j.mode for j in runner.jobs] == ["sanitize"] and flags == []
    assert "the stored run is from NVIDIA H100 80GB HBM3" in notes[0]


def test_skipped_checks_are_listed():
    runner = StandIn({"sanitize": make_run(None)})
    _, notes, _ = dynamic_checks.run_checks(DeviceSetup(runner, H100), subject(), skip=("rerun", "clock"))
    assert notes == ["rerun: skipped (--skip)", "clock: skipped (--skip)"]


def test_on_the_cpu_the_dynamic_checks_say_in_one_line_why_not():
    device = dynamic_checks.setup("cpu")
    assert device.runner is None and "\n" not in device.why_not and "need a CUDA GPU" in device.why_not
    assert dynamic_checks.run_checks(device, subject()) == ([], [device.why_not], None)


def test_the_fresh_runs_go_to_another_gpu_where_there_are_several():
    assert dynamic_checks.rerun_gpu(1) is None
    assert dynamic_checks.rerun_gpu(4) == "3"
    assert dynamic_checks.rerun_gpu(4, "2") == "2"


def test_a_fresh_run_faster_than_light_is_flagged_too():
    runner = StandIn({"leaderboard": stored_run((20.0, 40.0, 2.0))})
    flags, _, _ = dynamic_checks.run_checks(DeviceSetup(runner, H100), subject(), skip=("clock", "sanitize"))
    assert FlagClass.PHYSICS_FLOOR in classes(flags)

