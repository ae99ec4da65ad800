"""A problem's task.yml, loaded into a validated record.

The harness never tests a problem's name: everything it needs to know about a problem
(shapes, tolerance, timeouts, speed-of-light formula) comes from this record. Everything is
checked here, at load: a malformed task.yml is one TaskError line (the file, the key, what is
wrong, what is allowed), never a traceback later or a failure blamed on a submission.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from harness.contract.task_error import TaskError
from harness.contract.work_formula import OPERAND_FORMATS, SpeedOfLightSpec, work

REPO_ROOT = Path(__file__).resolve().parents[2]
PROBLEMS_DIR = REPO_ROOT / "problems"
STAGES = ("import", "test", "warmup", "call", "benchmark")
"""The limits of task.yml's timeouts_s, in seconds: the import; the first call of a shape (test,
warmup: it may compile); a later call of a shape (call); one case's timed loop (benchmark)."""
CASE_LISTS = ("tests", "cpu_tests", "benchmarks")
MAX_SEED = (1 << 63) - 1


@dataclass(frozen=True)
class ShapeRule:
    """What the contest guarantees about one case key (for a list, about every element)."""

    key: str
    multiple_of: int = 1
    one_of: tuple[int, ...] = ()

    def broken_by(self, case: Mapping[str, Any]) -> str | None:
        """Why ``case`` is outside the rule, or None."""
        values = case[self.key] if isinstance(case[self.key], (list, tuple)) else [case[self.key]]
        for value in values:
            if value % self.multiple_of:
                return f"{self.key}={value} is not a multiple of {self.multiple_of}"
            if self.one_of and value not in self.one_of:
                return f"{self.key}={value} is not one of {list(self.one_of)}"
        return None


@dataclass(frozen=True)
class VendorSpec:
    """A shipped submission that runs the product through the vendor library (task.yml
    ``vendor: {file, library}``, the file relative to the repository): the yardstick a result is
    shown against."""

    file: Path
    library: str


@dataclass(frozen=True)
class Task:
    name: str
    directory: Path
    description: str
    data_contract: str
    case_keys: tuple[str, ...]
    tests: tuple[dict[str, Any], ...]
    cpu_tests: tuple[dict[str, Any], ...]
    benchmarks: tuple[dict[str, Any], ...]
    rtol: float
    atol: float
    ranking: str
    speed_of_light: SpeedOfLightSpec
    timeouts_s: dict[str, float]
    shape_contract: tuple[ShapeRule, ...] = ()
    vendor: VendorSpec | None = None  # the vendor library's own way to run this product, if any
    calibration: bool = False  # a harness check (the timing ladder), never ranked nor served

    @property
    def reference_module(self) -> str:
        """Import name of the problem's reference.py (generate_input, ref_kernel, check)."""
        return f"problems.{self.directory.name}.reference"

    @property
    def task_py(self) -> Path:
        return self.directory / "task.py"

    def with_timeouts_scaled(self, factor: float) -> Task:
        if factor <= 0:
            raise TaskError(f"the timeout scale must be positive, got {factor}")
        return replace(self, timeouts_s={stage: limit * factor for stage, limit in self.timeouts_s.items()})


def list_problems() -> list[str]:
    return sorted(p.name for p in PROBLEMS_DIR.iterdir() if (p / "task.yml").is_file())


def contest_problems() -> list[str]:
    """The problems a leaderboard ranks and the service accepts: all but the calibration ones."""
    return [name for name in list_problems() if not load_task(name).calibration]


def _require(spec: dict[str, Any], key: str, kind: type | tuple[type, ...], where: Path) -> Any:
    if key not in spec:
        raise TaskError(f"{where}: missing key '{key}'; add it (see docs/architecture.md for the schema)")
    value = spec[key]
    if not isinstance(value, kind):
        raise TaskError(f"{where}: '{key}' must be {getattr(kind, '__name__', kind)}, got {type(value).__name__}")
    return value


def _is_int(value: Any) -> bool:
    return type(value) is int  # YAML's true/false are bools, an int subclass: never a size


def _number(value: Any, key: str, where: Path, *, positive: bool, unit: str = "") -> float:
    """A finite real number (positive, or else non-negative) or a TaskError naming ``key``."""
    if type(value) in (int, float) and math.isfinite(value) and (value > 0 or (value == 0 and not positive)):
        return float(value)
    allowed = f"a finite {'positive' if positive else 'non-negative'} number{unit}"
    hint = ""
    if isinstance(value, str):
        try:
            float(value)
            hint = " (text, not a number: write it unquoted, exponents with a dot: 1.0e-3, not 1e-3)"
        except ValueError:
            pass
    raise TaskError(f"{where}: {key} must be {allowed}, got {value!r}{hint}")


def _case_value_problem(key: str, value: Any) -> str | None:
    """Why ``value`` cannot be case key ``key``'s value, or None."""
    if key == "seed":
        return None if _is_int(value) and 0 <= value <= MAX_SEED else "must be a non-negative integer (below 2**63)"
    if _is_int(value) and value > 0:
        return None
    if isinstance(value, list) and value and all(_is_int(v) and v > 0 for v in value):
        return None
    return "must be a positive integer (or, for a grouped key, a non-empty list of positive integers)"


def _cases(spec: dict[str, Any], key: str, keys: tuple[str, ...], where: Path) -> tuple[dict[str, Any], ...]:
    cases = spec.get(key) or []
    if not isinstance(cases, list):
        raise TaskError(f"{where}: '{key}' must be a list of cases")
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or set(case) != set(keys):
            raise TaskError(f"{where}: {key}[{index}] must have exactly the keys {list(keys)}, got {case!r}")
        for name in keys:
            problem = _case_value_problem(name, case[name])
            if problem:
                raise TaskError(f"{where}: {key}[{index}].{name} {problem}, got {case[name]!r}")
    return tuple(cases)


def _check_case_kinds(task: Task, where: Path) -> None:
    """A key is a list (one value per group) in every case or in none: the generator takes one kind."""
    kinds: dict[str, tuple[bool, str]] = {}
    for key in CASE_LISTS:
        for index, case in enumerate(getattr(task, key)):
            for name, value in case.items():
                first = kinds.setdefault(name, (isinstance(value, list), f"{key}[{index}]"))
                if first[0] != isinstance(value, list):
                    kinds_text = ("a list", "an integer") if first[0] else ("an integer", "a list")
                    raise TaskError(f"{where}: {name} is {kinds_text[0]} in {first[1]} but {kinds_text[1]} in "
                                    f"{key}[{index}]; make it a list in every case or in none")


def _shape_contract(spec: dict[str, Any], keys: tuple[str, ...], where: Path) -> tuple[ShapeRule, ...]:
    contract = spec.get("shape_contract") or {}
    if not isinstance(contract, dict):
        raise TaskError(f"{where}: 'shape_contract' must map case keys to rules such as {{multiple_of: 128}}")
    rules = []
    for key, rule in contract.items():
        if key not in keys or not isinstance(rule, dict) or not set(rule) <= {"multiple_of", "one_of"}:
            raise TaskError(f"{where}: shape_contract.{key} must name a case key and hold multiple_of and/or "
                            "one_of, e.g. {multiple_of: 128}")
        multiple_of = rule.get("multiple_of", 1)
        if not _is_int(multiple_of) or multiple_of < 1:
            raise TaskError(f"{where}: shape_contract.{key}.multiple_of must be a positive integer, "
                            f"e.g. 128, got {multiple_of!r}")
        one_of = rule.get("one_of", ())
        if "one_of" in rule and (not isinstance(one_of, list) or not one_of or not all(map(_is_int, one_of))):
            raise TaskError(f"{where}: shape_contract.{key}.one_of must be a non-empty list of integers, "
                            f"e.g. [1, 2], got {one_of!r}")
        rules.append(ShapeRule(key, multiple_of, tuple(one_of)))
    return tuple(rules)


def _check_contract(task: Task, where: Path) -> None:
    """Every case the harness runs stays inside the contract a submission may rely on."""
    for key in CASE_LISTS:
        for index, case in enumerate(getattr(task, key)):
            for rule in task.shape_contract:
                broken = rule.broken_by(case)
                if broken:
                    raise TaskError(f"{where}: {key}[{index}] is outside the shape_contract ({broken}); "
                                    "choose a shape the contest guarantees")


def _check_speed_of_light(task: Task, where: Path) -> None:
    """Both formulas give a finite, non-negative number on every case (here, not mid-run)."""
    spec = task.speed_of_light
    for field in ("flops", "bytes"):
        formula = getattr(spec, field)
        alone = replace(task, speed_of_light=replace(spec, flops=formula, bytes=formula))
        for key in CASE_LISTS:
            for index, case in enumerate(getattr(task, key)):
                try:
                    value = work(alone, case)[0]
                except TaskError as error:
                    detail = str(error).removeprefix(f"{where}: ")
                    raise TaskError(f"{where}: speed_of_light.{field} fails on {key}[{index}]: {detail}") from None
                if not (math.isfinite(value) and value >= 0):
                    raise TaskError(f"{where}: speed_of_light.{field} {formula!r} gives {value} on {key}[{index}]; "
                                    "it must give a finite, non-negative count")


def _flag(spec: dict[str, Any], key: str, where: Path) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise TaskError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def _vendor(spec: dict[str, Any], where: Path) -> VendorSpec | None:
    """The optional vendor yardstick: a shipped submission file and the library it calls."""
    vendor = spec.get("vendor")
    if vendor is None:
        return None
    if not isinstance(vendor, dict) or not isinstance(vendor.get("file"), str) or not vendor.get("library"):
        raise TaskError(f"{where}: vendor must be a mapping with 'file' (a .py under submissions/) and 'library'")
    path = (REPO_ROOT / vendor["file"]).resolve()
    if not path.is_relative_to(REPO_ROOT / "submissions") or path.suffix != ".py" or not path.is_file():
        raise TaskError(f"{where}: vendor.file {vendor['file']!r} is not a .py file under submissions/")
    return VendorSpec(path, str(vendor["library"]))


def parse_task(spec: Any, directory: Path) -> Task:
    where = directory / "task.yml"
    if not isinstance(spec, dict):
        raise TaskError(f"{where}: expected a mapping at the top level")
    name = _require(spec, "name", str, where)
    if name != directory.name:
        raise TaskError(f"{where}: name '{name}' does not match the folder's name '{directory.name}'; "
                        "make them equal")
    keys = tuple(_require(spec, "case_keys", list, where))
    if not keys or len(set(keys)) != len(keys) or not all(isinstance(k, str) for k in keys):
        raise TaskError(f"{where}: case_keys must be a non-empty list of distinct names, e.g. [m, k, l, seed]")
    tolerance = _require(spec, "tolerance", dict, where)
    sol = _require(spec, "speed_of_light", dict, where)
    timeouts = _require(spec, "timeouts_s", dict, where)
    missing = [stage for stage in STAGES if stage not in timeouts]
    unknown = [stage for stage in timeouts if stage not in STAGES]
    if missing or unknown:
        wrong = f"lacks {missing}" if missing else f"has unknown stages {unknown}"
        raise TaskError(f"{where}: timeouts_s {wrong}; give seconds for each of {list(STAGES)}")
    if not {"rtol", "atol"} <= set(tolerance) or not {"flops", "bytes"} <= set(sol):
        raise TaskError(f"{where}: tolerance needs rtol and atol, speed_of_light needs flops and bytes")
    if not isinstance(sol.get("per_group", False), bool):
        raise TaskError(f"{where}: speed_of_light.per_group must be true or false, got {sol['per_group']!r}")
    operands = sol.get("operands", "nvfp4")
    if operands not in OPERAND_FORMATS:
        raise TaskError(f"{where}: speed_of_light.operands {operands!r} is not one of {list(OPERAND_FORMATS)}")
    published = sol.get("published_b200_us") or []
    if not isinstance(published, list):
        raise TaskError(f"{where}: speed_of_light.published_b200_us must be a list of times in us, one per benchmark")
    sol_spec = SpeedOfLightSpec(
        flops=str(sol["flops"]),
        bytes=str(sol["bytes"]),
        per_group=sol.get("per_group", False),
        operands=operands,
        published_b200_us=tuple(_number(v, f"speed_of_light.published_b200_us[{i}]", where, positive=True,
                                        unit=" of microseconds") for i, v in enumerate(published)),
    )
    task = Task(
        name=name,
        directory=directory,
        description=str(spec.get("description", "")),
        data_contract=str(spec.get("data_contract", "")),
        case_keys=keys,
        tests=_cases(spec, "tests", keys, where),
        cpu_tests=_cases(spec, "cpu_tests", keys, where),
        benchmarks=_cases(spec, "benchmarks", keys, where),
        rtol=_number(tolerance["rtol"], "tolerance.rtol", where, positive=False),
        atol=_number(tolerance["atol"], "tolerance.atol", where, positive=False),
        ranking=str(spec.get("ranking", "geometric_mean")),
        speed_of_light=sol_spec,
        timeouts_s={stage: _number(timeouts[stage], f"timeouts_s.{stage}", where, positive=True, unit=" of seconds")
                    for stage in STAGES},
        shape_contract=_shape_contract(spec, keys, where),
        vendor=_vendor(spec, where),
        calibration=_flag(spec, "calibration", where),
    )
    _check_case_kinds(task, where)
    _check_contract(task, where)
    if not task.tests:
        raise TaskError(f"{where}: 'tests' is empty; a problem needs at least one test case")
    if sol_spec.published_b200_us and len(sol_spec.published_b200_us) != len(task.benchmarks):
        raise TaskError(f"{where}: published_b200_us has {len(sol_spec.published_b200_us)} values "
                        f"for {len(task.benchmarks)} benchmarks; give one per benchmark")
    _check_speed_of_light(task, where)
    return task


def _read_spec(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise TaskError(f"{path}: not valid YAML{line}; fix the syntax there") from None


def load_task(problem: str | Path) -> Task:
    """Load a problem by name (a folder under problems/) or by the path of its folder.

    A folder given by path is a variant of the shipped problem it is named after: the harness
    imports that problem's reference (``problems.<folder name>.reference``), whose checker and
    input generator read the shipped task.yml. So the folder must be named after a shipped
    problem, and its ``case_keys``, ``tolerance`` and ``distribution`` must equal the shipped
    problem's; its shapes (``tests``, ``cpu_tests``, ``benchmarks``, ``shape_contract``),
    ``speed_of_light`` and ``timeouts_s`` may differ. Anything else is a TaskError.
    """
    directory = Path(problem)
    if not (directory / "task.yml").is_file():
        directory = PROBLEMS_DIR / str(problem)
    path = directory / "task.yml"
    if not path.is_file():
        raise TaskError(f"unknown problem '{problem}': choose one of {', '.join(list_problems())}")
    directory = directory.resolve()
    spec = _read_spec(path)
    shipped_dir = (PROBLEMS_DIR / directory.name).resolve()
    if directory == shipped_dir:
        return parse_task(spec, directory)
    if directory.name not in list_problems():
        raise TaskError(f"{path}: a problem folder given by path must be named after a shipped problem (the "
                        f"harness imports problems.<folder name>.reference); rename '{directory.name}' to one "
                        f"of {', '.join(list_problems())}")
    task = parse_task(spec, directory)
    shipped_spec = _read_spec(shipped_dir / "task.yml")
    shipped = parse_task(shipped_spec, shipped_dir)
    differs = [key for key, mine, theirs in (
        ("case_keys", set(task.case_keys), set(shipped.case_keys)),
        ("tolerance", (task.rtol, task.atol), (shipped.rtol, shipped.atol)),
        ("distribution", spec.get("distribution"), shipped_spec.get("distribution")),
    ) if mine != theirs]
    if differs:
        raise TaskError(f"{path}: {' and '.join(differs)} must equal {shipped_dir / 'task.yml'}'s: the checker and "
                        "the inputs use the shipped problem's; change them there (a copy may change shapes, "
                        "tests, benchmarks, speed_of_light and timeouts_s only)")
    return task


def shape_text(case: Mapping[str, Any]) -> str:
    """A case's shape, without its seed, lists without spaces: 'm=[80,176] n=[4096,4096] k=[7168,7168] g=2'.
    The one way a shape is written (reports, pages, caches, keys)."""
    def text(value: Any) -> str:
        return "[" + ",".join(str(v) for v in value) + "]" if isinstance(value, (list, tuple)) else str(value)
    return " ".join(f"{k}={text(v)}" for k, v in case.items() if k != "seed")


def case_text(case: Mapping[str, Any]) -> str:
    """A case's shape and its seed: which inputs it was checked on ('m=128 k=256 l=1 seed=7')."""
    return shape_text(case) + (f" seed={case['seed']}" if "seed" in case else "")
