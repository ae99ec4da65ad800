"""A case's work by its task's formula: bytes and flops as arithmetic over the case's keys.

One evaluator, used by task validation (every formula on every case, at load) and by the speed
of light (``harness.sol``): data must not run code, so it is a small AST walker that accepts
numbers, the case's names and + - * / // ** only, never eval().
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.contract import python_ast
from harness.contract.task_error import TaskError

MAX_EXPRESSION_CHARS = 2000


@dataclass(frozen=True)
class SpeedOfLightSpec:
    """Arithmetic expressions over a case's keys; per_group sums them over grouped lists."""

    flops: str
    bytes: str
    per_group: bool
    published_b200_us: tuple[float, ...]
    operands: str = "nvfp4"  # the operand format, which decides the tensor rate that bounds the math


OPERAND_FORMATS = ("nvfp4", "fp8", "fp32")
"""Operand formats a speed of light knows the math rate of (harness.sol.breakdown.math_rate)."""


class HasFormula(Protocol):
    """A loaded task, as far as its formula goes."""

    speed_of_light: SpeedOfLightSpec
    directory: Path


_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def evaluate_expression(expression: str, names: Mapping[str, Any]) -> float:
    """Value of an arithmetic expression over ``names``; anything but arithmetic is a TaskError.

    Why not eval(): task.yml is data, and data must not run code (``__import__('os')``).
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise TaskError(f"speed_of_light expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = python_ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise TaskError(f"speed_of_light expression {expression!r} is not valid arithmetic") from None
    try:
        return float(_evaluate(tree.body, names, expression))
    except (ZeroDivisionError, OverflowError, RecursionError) as error:
        raise TaskError(f"speed_of_light expression {expression!r} cannot be evaluated: {error}") from None


def _evaluate(node: ast.AST, names: Mapping[str, Any], expression: str) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise TaskError(f"speed_of_light expression {expression!r} uses '{node.id}', which is not a "
                            f"case key (keys: {', '.join(names)})")
        value = names[node.id]
        if type(value) not in (int, float):
            raise TaskError(f"speed_of_light expression {expression!r}: case key '{node.id}' is "
                            f"{type(value).__name__}, not a number (grouped lists need per_group: true)")
        return float(value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, names, expression), _evaluate(node.right, names, expression)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, names, expression))
    raise TaskError(f"speed_of_light expression {expression!r}: {type(node).__name__} is not allowed; "
                    "use numbers, case keys, + - * / // ** and parentheses only")


def work(task: HasFormula, case: Mapping[str, Any]) -> tuple[float, float]:
    """(bytes, flops) of one case by the task's formula; per_group sums over the grouped lists."""
    spec = task.speed_of_light
    if not spec.per_group:
        return evaluate_expression(spec.bytes, case), evaluate_expression(spec.flops, case)
    lengths = {len(v) for v in case.values() if isinstance(v, (list, tuple))}
    if len(lengths) != 1:
        raise TaskError(f"{task.directory / 'task.yml'}: per_group needs list-valued keys of one common "
                        f"length, got case {case!r}")
    total_bytes = total_flops = 0.0
    for index in range(lengths.pop()):
        group = {k: (v[index] if isinstance(v, (list, tuple)) else v) for k, v in case.items()}
        total_bytes += evaluate_expression(spec.bytes, group)
        total_flops += evaluate_expression(spec.flops, group)
    return total_bytes, total_flops
