"""A problem's task.yml, loaded into a validated record.

The harness never tests a problem's name: everything it needs to know about a problem
(shapes, tolerance, timeouts, speed-of-light formula) comes from this record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

PROBLEMS_DIR = Path(__file__).resolve().parent.parent / "problems"
STAGES = ("import", "warmup", "test", "benchmark")


class TaskError(Exception):
    """A task.yml (or a case in it) is malformed; the message names the file and the fix."""


@dataclass(frozen=True)
class SpeedOfLightSpec:
    """Arithmetic expressions over a case's keys; per_group sums them over grouped lists."""

    flops: str
    bytes: str
    per_group: bool
    published_b200_us: tuple[float, ...]


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


def _require(spec: dict[str, Any], key: str, kind: type | tuple[type, ...], where: Path) -> Any:
    if key not in spec:
        raise TaskError(f"{where}: missing key '{key}'; add it (see docs/architecture.md for the schema)")
    value = spec[key]
    if not isinstance(value, kind):
        raise TaskError(f"{where}: '{key}' must be {getattr(kind, '__name__', kind)}, got {type(value).__name__}")
    return value


def _cases(spec: dict[str, Any], key: str, keys: tuple[str, ...], where: Path) -> tuple[dict[str, Any], ...]:
    cases = spec.get(key) or []
    if not isinstance(cases, list):
        raise TaskError(f"{where}: '{key}' must be a list of cases")
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or set(case) != set(keys):
            raise TaskError(f"{where}: {key}[{index}] must have exactly the keys {list(keys)}, got {case!r}")
    return tuple(cases)


def _shape_contract(spec: dict[str, Any], keys: tuple[str, ...], where: Path) -> tuple[ShapeRule, ...]:
    contract = spec.get("shape_contract") or {}
    if not isinstance(contract, dict):
        raise TaskError(f"{where}: 'shape_contract' must map case keys to rules such as {{multiple_of: 128}}")
    rules = []
    for key, rule in contract.items():
        if key not in keys or not isinstance(rule, dict) or not set(rule) <= {"multiple_of", "one_of"}:
            raise TaskError(f"{where}: shape_contract.{key} must name a case key and hold multiple_of and/or "
                            "one_of, e.g. {multiple_of: 128}")
        rules.append(ShapeRule(key, int(rule.get("multiple_of", 1)), tuple(int(v) for v in rule.get("one_of", ()))))
    return tuple(rules)


def _check_contract(task: Task, where: Path) -> None:
    """Every case the harness runs stays inside the contract a submission may rely on."""
    for key in ("tests", "cpu_tests", "benchmarks"):
        for index, case in enumerate(getattr(task, key)):
            for rule in task.shape_contract:
                broken = rule.broken_by(case)
                if broken:
                    raise TaskError(f"{where}: {key}[{index}] is outside the shape_contract ({broken}); "
                                    "choose a shape the contest guarantees")


def parse_task(spec: Any, directory: Path) -> Task:
    where = directory / "task.yml"
    if not isinstance(spec, dict):
        raise TaskError(f"{where}: expected a mapping at the top level")
    keys = tuple(_require(spec, "case_keys", list, where))
    tolerance = _require(spec, "tolerance", dict, where)
    sol = _require(spec, "speed_of_light", dict, where)
    timeouts = _require(spec, "timeouts_s", dict, where)
    missing = [stage for stage in STAGES if stage not in timeouts]
    if missing:
        raise TaskError(f"{where}: timeouts_s lacks {missing}; give seconds for each of {list(STAGES)}")
    try:
        rtol, atol = float(tolerance["rtol"]), float(tolerance["atol"])
        sol_spec = SpeedOfLightSpec(
            flops=str(sol["flops"]),
            bytes=str(sol["bytes"]),
            per_group=bool(sol.get("per_group", False)),
            published_b200_us=tuple(float(v) for v in sol.get("published_b200_us", ())),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise TaskError(
            f"{where}: tolerance needs rtol and atol, speed_of_light needs flops and bytes ({error})"
        ) from None
    task = Task(
        name=str(_require(spec, "name", str, where)),
        directory=directory,
        description=str(spec.get("description", "")),
        data_contract=str(spec.get("data_contract", "")),
        case_keys=keys,
        tests=_cases(spec, "tests", keys, where),
        cpu_tests=_cases(spec, "cpu_tests", keys, where),
        benchmarks=_cases(spec, "benchmarks", keys, where),
        rtol=rtol,
        atol=atol,
        ranking=str(spec.get("ranking", "geometric_mean")),
        speed_of_light=sol_spec,
        timeouts_s={stage: float(timeouts[stage]) for stage in STAGES},
        shape_contract=_shape_contract(spec, keys, where),
    )
    _check_contract(task, where)
    if not task.tests:
        raise TaskError(f"{where}: 'tests' is empty; a problem needs at least one test case")
    if sol_spec.published_b200_us and len(sol_spec.published_b200_us) != len(task.benchmarks):
        raise TaskError(f"{where}: published_b200_us has {len(sol_spec.published_b200_us)} values "
                        f"for {len(task.benchmarks)} benchmarks; give one per benchmark")
    return task


def load_task(problem: str | Path) -> Task:
    """Load a problem by name (a folder under problems/) or by the path of its folder."""
    directory = Path(problem)
    if not (directory / "task.yml").is_file():
        directory = PROBLEMS_DIR / str(problem)
    path = directory / "task.yml"
    if not path.is_file():
        raise TaskError(f"unknown problem '{problem}': choose one of {', '.join(list_problems())}")
    try:
        spec = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise TaskError(f"{path}: not valid YAML{line}; fix the syntax there") from None
    return parse_task(spec, directory.resolve())


def shape_text(case: Mapping[str, Any]) -> str:
    """A case without its seed, lists without spaces: 'm=[80,176] n=[4096,4096] k=[7168,7168] g=2'."""
    def text(value: Any) -> str:
        return "[" + ",".join(str(v) for v in value) + "]" if isinstance(value, (list, tuple)) else str(value)
    return " ".join(f"{k}={text(v)}" for k, v in case.items() if k != "seed")
