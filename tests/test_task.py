"""task.yml loading: the shipped problems load, malformed files give one clear line."""

import pytest
import yaml

from harness.contract.task_error import TaskError
from harness.contract.task_spec import PROBLEMS_DIR, contest_problems, list_problems, load_task, parse_task


def test_the_six_problems_and_the_ladder_load():
    assert contest_problems() == ["fp8_blockwise_gemm", "mxfp8_gemm", "nvfp4_dual_gemm", "nvfp4_gemm", "nvfp4_gemv",
                                  "nvfp4_group_gemm"]
    assert list_problems() == [*contest_problems(), "timing_ladder"]
    assert load_task("timing_ladder").calibration and not load_task("nvfp4_gemv").calibration
    for name in list_problems():
        task = load_task(name)
        assert task.tests and task.benchmarks and task.cpu_tests
        # The contest published B200 figures for its four NVFP4 problems; the fp8 ones have none.
        published = task.speed_of_light.published_b200_us
        assert len(published) == (len(task.benchmarks) if name.startswith("nvfp4") else 0)
        assert task.reference_module == f"problems.{name}.reference"


def _spec(name="nvfp4_gemv"):
    return yaml.safe_load((PROBLEMS_DIR / name / "task.yml").read_text())


def test_unknown_problem_names_the_choices():
    with pytest.raises(TaskError, match="choose one of fp8_blockwise_gemm, mxfp8_gemm, nvfp4_dual_gemm"):
        load_task("nvfp4_conv")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.pop("tolerance"), "missing key 'tolerance'"),
        (lambda s: s["tests"].append({"m": 1}), r"tests\[9\] must have exactly the keys"),
        (lambda s: s["timeouts_s"].pop("warmup"), "timeouts_s lacks"),
        (lambda s: s["speed_of_light"]["published_b200_us"].pop(), "one per benchmark"),
        (lambda s: s.update(tests=[]), "'tests' is empty"),
        (lambda s: s["cpu_tests"].append({"m": 40, "k": 256, "l": 1, "seed": 1}),
         r"cpu_tests\[2\] is outside the shape_contract \(m=40 is not a multiple of 128\)"),
        (lambda s: s["shape_contract"].update(q={"multiple_of": 2}), "shape_contract.q must name a case key"),
        (lambda s: s["shape_contract"].update(m={"divisible": 2}), "shape_contract.m must name a case key"),
        (lambda s: s["shape_contract"].update(m={"multiple_of": 0}), r"shape_contract\.m\.multiple_of must be a pos"),
        (lambda s: s["tests"][0].update(m="128"), r"tests\[0\]\.m must be a positive integer"),
        (lambda s: s["tests"][0].update(seed=-1), r"tests\[0\]\.seed must be a non-negative integer"),
        (lambda s: s["timeouts_s"].update(test=float("nan")), r"timeouts_s\.test must be a finite positive number"),
        (lambda s: s["tolerance"].update(rtol=-1.0), r"tolerance\.rtol must be a finite non-negative number"),
        (lambda s: s["speed_of_light"].update(flops="2*m*q*l"), r"speed_of_light\.flops fails on tests\[0\]"),
        (lambda s: s.update(name="nvfp4_gemm"), "name 'nvfp4_gemm' does not match the folder's name 'nvfp4_gemv'"),
    ],
)
def test_malformed_specs_are_rejected_with_the_fix(mutate, message):
    spec = _spec()
    mutate(spec)
    with pytest.raises(TaskError, match=message):
        parse_task(spec, PROBLEMS_DIR / "nvfp4_gemv")


def test_invalid_yaml_names_the_line(tmp_path):
    (tmp_path / "task.yml").write_text("name: x\ntests: [\n")
    with pytest.raises(TaskError, match="not valid YAML at line"):
        load_task(tmp_path)


def test_timeouts_scale():
    task = load_task("nvfp4_gemv")
    assert task.with_timeouts_scaled(0.5).timeouts_s["import"] == task.timeouts_s["import"] / 2
    with pytest.raises(TaskError):
        task.with_timeouts_scaled(0)


@pytest.mark.parametrize("problem", list_problems())
def test_default_stage_limits_end_a_hang_in_minutes_and_a_repeated_call_in_seconds(problem):
    """A first call of a shape may compile (a Triton or CuTe JIT, a load_inline build): minutes. A
    later call of the same shape (warm-up, timed, profiled) runs a compiled kernel: seconds."""
    limits = load_task(problem).timeouts_s
    assert set(limits) == {"import", "test", "warmup", "call", "benchmark"}
    assert all(60 <= limits[stage] <= 180 for stage in ("import", "test", "warmup", "benchmark"))
    assert 10 <= limits["call"] <= 60


def test_every_problem_declares_a_contract_its_contest_shapes_meet():
    for name in list_problems():
        task = load_task(name)
        assert {rule.key for rule in task.shape_contract} >= ({"n"} if task.calibration else {"m", "k"})
        for case in task.tests + task.benchmarks + task.cpu_tests:
            assert all(rule.broken_by(case) is None for rule in task.shape_contract)


def test_a_list_case_is_checked_element_by_element():
    task = load_task("nvfp4_group_gemm")
    (m_rule,) = [rule for rule in task.shape_contract if rule.key == "m"]
    assert m_rule.broken_by({"m": [40, 130]}) == "m=130 is not a multiple of 4"


def test_a_calibration_problem_is_kept_off_the_leaderboard_and_the_service(tmp_path):
    """The timing ladder is evaluated like any problem but never ranked nor served."""
    from harness.commands.leaderboard_command import resolve
    from harness.commands.main import build_parser

    args = build_parser().parse_args(["leaderboard", "--problem", "timing_ladder", "--out", str(tmp_path)])
    with pytest.raises(Exception, match="unknown problem 'timing_ladder'"):
        resolve(args)
    spec = yaml.safe_load((PROBLEMS_DIR / "timing_ladder" / "task.yml").read_text())
    spec["calibration"] = "yes"
    with pytest.raises(TaskError, match="calibration must be true or false"):
        parse_task(spec, PROBLEMS_DIR / "timing_ladder")
