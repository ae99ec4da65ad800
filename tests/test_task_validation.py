"""A malformed task.yml is one TaskError line at load (file, key, what is wrong, what is allowed).

Each case writes a broken copy of a shipped task.yml into a folder named after the problem (the
only kind of copy load_task accepts by path) and loads it by path.
"""

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.contract.results import ExitCode, Status
from harness.contract.task_error import TaskError
from harness.contract.task_spec import PROBLEMS_DIR, load_task
from harness.judge.run import evaluate_submission
from harness.judge.verdict.modes import MODES

Spec = dict[str, Any]


def shipped_spec(problem: str) -> Spec:
    return yaml.safe_load((PROBLEMS_DIR / problem / "task.yml").read_text())


def write_copy(folder: Path, problem: str, mutate: Callable[[Spec], Any] = lambda spec: None,
               text: Callable[[str], str] = lambda text: text) -> Path:
    """``folder/problem/task.yml``: the shipped spec after ``mutate``, dumped, then edited by ``text``."""
    spec = shipped_spec(problem)
    mutate(spec)
    target = folder / problem
    target.mkdir(parents=True, exist_ok=True)
    (target / "task.yml").write_text(text(yaml.safe_dump(spec, sort_keys=False)))
    return target


def set_in(path: str, value: Any) -> Callable[[Spec], None]:
    """A mutation setting ``spec[a][b]...`` (``tests.0.m``: indices are list positions)."""
    def mutate(spec: Spec) -> None:
        *parents, last = path.split(".")
        node: Any = spec
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[int(last) if isinstance(node, list) else last] = value
    return mutate


GEMV = "nvfp4_gemv"
GROUP = "nvfp4_group_gemm"

BROKEN = [
    # 1. shape_contract rules
    (GEMV, set_in("shape_contract.m.multiple_of", 0), r"shape_contract\.m\.multiple_of must be a positive integer"),
    (GEMV, set_in("shape_contract.m.multiple_of", "abc"), r"shape_contract\.m\.multiple_of must be a positive"),
    (GEMV, set_in("shape_contract.m.multiple_of", -128), r"shape_contract\.m\.multiple_of must be a positive"),
    (GEMV, set_in("shape_contract.m.multiple_of", 2.5), r"shape_contract\.m\.multiple_of must be a positive"),
    (GEMV, set_in("shape_contract.m.multiple_of", True), r"shape_contract\.m\.multiple_of must be a positive"),
    (GEMV, set_in("shape_contract.m", {"one_of": []}), r"shape_contract\.m\.one_of must be a non-empty list of int"),
    (GEMV, set_in("shape_contract.m", {"one_of": 128}), r"shape_contract\.m\.one_of must be a non-empty list"),
    (GEMV, set_in("shape_contract.m", {"one_of": ["a"]}), r"shape_contract\.m\.one_of must be a non-empty list"),
    # 2. case values
    (GEMV, set_in("tests.0.m", "128"), r"tests\[0\]\.m must be a positive integer .*got '128'"),
    (GEMV, set_in("tests.0.m", -128), r"tests\[0\]\.m must be a positive integer .*got -128"),
    (GEMV, set_in("tests.0.m", 0), r"tests\[0\]\.m must be a positive integer .*got 0"),
    (GEMV, set_in("benchmarks.1.k", 7168.0), r"benchmarks\[1\]\.k must be a positive integer"),
    (GEMV, set_in("cpu_tests.0.l", True), r"cpu_tests\[0\]\.l must be a positive integer"),
    (GEMV, set_in("tests.0.seed", -1), r"tests\[0\]\.seed must be a non-negative integer"),
    (GEMV, set_in("tests.0.seed", "1111"), r"tests\[0\]\.seed must be a non-negative integer"),
    (GEMV, set_in("tests.0.seed", 1 << 64), r"tests\[0\]\.seed must be a non-negative integer \(below 2\*\*63\)"),
    (GROUP, set_in("tests.0.m", []), r"tests\[0\]\.m must be a positive integer \(or, for a grouped key, a non-empty"),
    (GROUP, set_in("tests.0.m", [96, "128"]), r"tests\[0\]\.m must be .*non-empty list of positive integers"),
    (GROUP, set_in("tests.0.m", [96, -128]), r"tests\[0\]\.m must be .*got \[96, -128\]"),
    (GROUP, set_in("tests.0.g", [2]), r"g is a list in tests\[0\] but an integer in tests\[1\]"),
    (GROUP, set_in("benchmarks.0.m", 128), r"m is a list in tests\[0\] but an integer in benchmarks\[0\]"),
    (GROUP, set_in("tests.0.m", [96]), r"speed_of_light\.flops fails on tests\[0\]: per_group needs list-valued"),
    # 3. timeouts
    (GEMV, set_in("timeouts_s.import", -1), r"timeouts_s\.import must be a finite positive number of seconds, got -1"),
    (GEMV, set_in("timeouts_s.import", 0), r"timeouts_s\.import must be a finite positive number"),
    (GEMV, set_in("timeouts_s.import", "soon"), r"timeouts_s\.import must be a finite positive number.*'soon'$"),
    (GEMV, set_in("timeouts_s.test", "120"), r"timeouts_s\.test must be .*write it unquoted"),
    (GEMV, set_in("timeouts_s.import", math.inf),
     r"timeouts_s\.import must be a finite positive number of seconds, got inf"),
    (GEMV, set_in("timeouts_s.warmup", math.nan),
     r"timeouts_s\.warmup must be a finite positive number of seconds, got nan"),
    (GEMV, set_in("timeouts_s.imprt", 5), r"timeouts_s has unknown stages \['imprt'\]"),
    # 4. speed_of_light formulas, evaluated on every case at load
    (GEMV, set_in("speed_of_light.flops", "2*m*q*l"),
     r"speed_of_light\.flops fails on tests\[0\]: .*uses 'q', which is not a case key"),
    (GEMV, set_in("speed_of_light.bytes", "m * k / (l - l)"), r"speed_of_light\.bytes fails on tests\[0\]: .*"),
    (GEMV, set_in("speed_of_light.bytes", "__import__('os')"), r"speed_of_light\.bytes fails on tests\[0\]"),
    (GEMV, set_in("speed_of_light.flops", "m - 2 * m"), r"speed_of_light\.flops 'm - 2 \* m' gives -128\.0"),
    (GEMV, set_in("speed_of_light.per_group", "no"), r"speed_of_light\.per_group must be true or false"),
    (GEMV, set_in("speed_of_light.published_b200_us", [1.0, "x", 2.0]), r"published_b200_us\[1\] must be a finite"),
    (GEMV, set_in("speed_of_light.operands", "fp6"), r"speed_of_light.operands 'fp6' is not one of"),
    (GROUP, set_in("speed_of_light.per_group", False), r"speed_of_light\.flops fails on tests\[0\]: .*not a number"),
    # 5. tolerance
    (GEMV, set_in("tolerance.rtol", -1.0e-3), r"tolerance\.rtol must be a finite non-negative number, got -0\.001"),
    (GEMV, set_in("tolerance.atol", math.nan), r"tolerance\.atol must be a finite non-negative number, got nan"),
    (GEMV, set_in("tolerance.atol", math.inf), r"tolerance\.atol must be a finite non-negative number, got inf"),
    (GEMV, set_in("tolerance.rtol", "1e-3"), r"tolerance\.rtol must be .*1\.0e-3, not 1e-3"),
    (GEMV, lambda s: s["tolerance"].pop("atol"), r"tolerance needs rtol and atol"),
    # 6. a copy by path: name, tolerance, distribution and case_keys are the shipped problem's
    (GEMV, set_in("name", "nvfp4_gemm"), r"name 'nvfp4_gemm' does not match the folder's name 'nvfp4_gemv'"),
    (GEMV, set_in("tolerance.rtol", 2.0e-3),
     r"tolerance must equal .*problems/nvfp4_gemv/task\.yml's: the checker and the inputs use the shipped "
     r"problem's; change them there"),
    (GEMV, set_in("distribution.scale_log2", [-4, 0]), r"distribution must equal .*change them there"),
    (GEMV, lambda s: s.pop("distribution"), r"distribution must equal"),
    (GEMV, lambda s: s["tolerance"].update(atol=1.0) or s["distribution"].update(codes="x"),
     r"tolerance and distribution must equal"),
    (GEMV, set_in("case_keys", ["m", "k", "seed"]), r"tests\[0\] must have exactly the keys"),
    (GEMV, set_in("case_keys", ["m", "m", "k", "l", "seed"]), r"case_keys must be a non-empty list of distinct"),
    (GEMV, lambda s: drop_key(s, "l"), r"case_keys must equal .*change them there"),
]


def drop_key(spec: Spec, key: str) -> None:
    """A self-consistent spec without case key ``key`` (the shipped reference still takes it)."""
    spec["case_keys"].remove(key)
    for name in ("tests", "cpu_tests", "benchmarks"):
        for case in spec[name]:
            case.pop(key)
    for name in ("flops", "bytes"):
        spec["speed_of_light"][name] = spec["speed_of_light"][name].replace(f"* {key}", "")
    spec["shape_contract"].pop(key, None)


@pytest.mark.parametrize(("problem", "mutate", "message"), BROKEN)
def test_a_broken_copy_is_one_task_error_naming_file_and_key(tmp_path, problem, mutate, message):
    folder = write_copy(tmp_path, problem, mutate)
    with pytest.raises(TaskError, match=message) as caught:
        load_task(folder)
    text = str(caught.value)
    assert text.startswith(f"{folder.resolve() / 'task.yml'}: ") and "\n" not in text


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("multiple_of: 128", "multiple_of: abc", 1), r"multiple_of must be a positive .*'abc'"),
        (lambda t: t.replace("import: 60", "import: .inf").replace("import: 120", "import: .inf"), "got inf"),
        (lambda t: t.replace("import: 60", "import: .nan").replace("import: 120", "import: .nan"), "got nan"),
    ],
)
def test_yaml_spellings_are_refused(tmp_path, edit, message):
    folder = write_copy(tmp_path, GEMV, text=edit)
    with pytest.raises(TaskError, match=message):
        load_task(folder)


def test_a_folder_named_unlike_every_shipped_problem_names_the_choices(tmp_path):
    folder = write_copy(tmp_path, GEMV)
    renamed = folder.rename(tmp_path / "p")
    with pytest.raises(TaskError, match=r"p/task\.yml: a problem folder given by path must be named after a "
                                        r"shipped problem .*rename 'p' to one of fp8_blockwise_gemm, mxfp8_gemm, "
                                        r"nvfp4_dual_gemm"):
        load_task(renamed)


def test_a_copy_may_change_shapes_timeouts_and_the_speed_of_light(tmp_path):
    def reduce(spec: Spec) -> None:
        spec["tests"] = spec["cpu_tests"][:1]
        spec["cpu_tests"] = []
        spec["benchmarks"] = spec["benchmarks"][:1]
        spec["speed_of_light"]["published_b200_us"] = spec["speed_of_light"]["published_b200_us"][:1]
        spec["speed_of_light"]["flops"] = "4 * m * n * k * l"
        spec["timeouts_s"] = {"import": 60.0, "warmup": 60.0, "test": 60, "call": 10, "benchmark": 120.0}
        spec["shape_contract"]["m"] = {"multiple_of": 128, "one_of": [128, 256]}
        spec["description"] = "a cut-down copy"

    task = load_task(write_copy(tmp_path, "nvfp4_gemm", reduce))
    assert len(task.tests) == len(task.benchmarks) == 1 and task.timeouts_s["test"] == 60.0
    assert task.reference_module == "problems.nvfp4_gemm.reference"
    shipped = load_task("nvfp4_gemm")
    assert (task.rtol, task.atol) == (shipped.rtol, shipped.atol)


def test_a_copy_may_list_the_case_keys_in_another_order(tmp_path):
    task = load_task(write_copy(tmp_path, GEMV, set_in("case_keys", ["seed", "l", "k", "m"])))
    assert task.case_keys == ("seed", "l", "k", "m")


def test_the_shipped_problems_load_by_path_too():
    for problem in ("nvfp4_gemv", "nvfp4_group_gemm"):
        assert load_task(PROBLEMS_DIR / problem) == load_task(problem)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (set_in("shape_contract.m.multiple_of", 0), "shape_contract.m.multiple_of"),
        (set_in("tests.0.m", -128), "tests[0].m must be a positive integer"),
        (set_in("speed_of_light.flops", "2*m*q*l"), "uses 'q'"),
    ],
)
def test_eval_reports_a_broken_task_as_bad_input_in_one_line(tmp_path, mutate, needle):
    folder = write_copy(tmp_path, GEMV, mutate)
    result = evaluate_submission(str(folder), PROBLEMS_DIR / GEMV / "submission.py", mode=MODES["test"], device="cpu")
    assert result.status == Status.BAD_INPUT and result.exit_code == ExitCode.BAD_INPUT == 113
    assert needle in result.reason and "\n" not in result.reason and str(folder) in result.reason
