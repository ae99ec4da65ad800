"""What the static rules need to know of a Python file: canonical names through aliases, folded strings.

Why canonical names: ``import torch.cuda as tc; tc.Stream()``, ``from torch.cuda import Stream as S``
and ``cuda = torch.cuda; cuda.Stream()`` all mean ``torch.cuda.Stream``; rules are written once,
against that. Why folding: ``"cudaSt" + "reamCreate"`` or ``"".join(["cu", "da"])`` keeps a name
out of a text search; folded, the rules read what the program will read. Nothing is executed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from harness.contract import python_ast

MAX_FOLDED_CHARS = 1 << 20
"""Folding stops past this length (a string repeated into gigabytes is not read)."""


def dotted(node: ast.AST) -> str | None:
    """'a.b.c' for a Name or an Attribute chain on a Name; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


@dataclass
class FileFacts:
    """A parsed file: its lines, import aliases, constant string names, each node's parent."""

    tree: ast.Module
    lines: list[str]
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> canonical dotted name
    strings: dict[str, str] = field(default_factory=dict)  # name bound once to a foldable string
    bound_once: dict[str, ast.expr] = field(default_factory=dict)  # name bound once -> its value
    parents: dict[int, ast.AST] = field(default_factory=dict)  # id(node) -> its parent

    def line(self, number: int | None) -> str:
        return self.lines[number - 1] if number and 0 < number <= len(self.lines) else ""

    def canonical(self, node: ast.AST) -> str | None:
        """The dotted name of an expression with its first part resolved through the aliases."""
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{rest}" if rest else base

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def is_prose(self, node: ast.AST) -> bool:
        """A string that is a statement of its own (a docstring): words about the code, not code."""
        return isinstance(node, ast.Constant) and isinstance(self.parent(node), ast.Expr)

    def prose_lines(self) -> set[int]:
        return {line for node in ast.walk(self.tree) if self.is_prose(node)
                for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    aliases[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _assignments(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Every value bound to each plain name (module and function level alike)."""
    bound: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name) and node.value:
            bound.setdefault(node.target.id, []).append(node.value)
    return bound


def read_facts(text: str, filename: str = "<source>") -> FileFacts:
    """Parse a file (SyntaxError propagates) and work out its aliases and constant strings."""
    tree = python_ast.parse(text, filename=filename)
    facts = FileFacts(tree, text.splitlines(), _import_aliases(tree))
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            facts.parents[id(child)] = node
    bound = _assignments(tree)
    facts.bound_once = {name: values[0] for name, values in bound.items() if len(values) == 1}
    for name, values in bound.items():  # module aliases: cuda = torch.cuda (bound once, to a known name)
        target = facts.canonical(values[0]) if len(values) == 1 and name not in facts.aliases else None
        if target and (target.split(".")[0] in facts.aliases.values() or target.split(".")[0] in facts.aliases):
            facts.aliases[name] = target
    for _ in range(3):  # names bound once to strings, which may use each other (a = "cu"; b = a + "da")
        for name, values in bound.items():
            if len(values) == 1 and (value := fold(values[0], facts.strings)) is not None:
                facts.strings[name] = value
    return facts


def fold(node: ast.AST | None, names: dict[str, str] | None = None) -> str | None:
    """The string an expression always evaluates to, when it is made of constants only; else None.

    Handles +, "sep".join of a constant list or tuple, f-strings of constants, slices of constants
    ([::-1]), chr(int), bytes.fromhex(...).decode() and names bound once to such a string.
    """
    names = names or {}
    value = _fold(node, names)
    return value if value is None or len(value) <= MAX_FOLDED_CHARS else None


def _fold(node: ast.AST | None, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return node.value
        return node.value.decode("latin-1") if isinstance(node.value, bytes) else None
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fold(node.left, names), _fold(node.right, names)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = [_fold(v.value if isinstance(v, ast.FormattedValue) else v, names) for v in node.values]
        return "".join(parts) if all(p is not None for p in parts) else None  # type: ignore[arg-type]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        return _fold_slice(node, names)
    if isinstance(node, ast.Call):
        return _fold_call(node, names)
    return None


def _integer(node: ast.AST | None) -> int | None:
    """A constant int, or minus one (a slice's -1 is a UnaryOp in the tree)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _integer(node.operand)
        return -value if value is not None else None
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) else None


def _fold_slice(node: ast.Subscript, names: dict[str, str]) -> str | None:
    text = _fold(node.value, names)
    bounds = [node.slice.lower, node.slice.upper, node.slice.step]  # type: ignore[attr-defined]
    values = [None if b is None else _integer(b) for b in bounds]
    if text is None or any(b is not None and v is None for b, v in zip(bounds, values)) or values[2] == 0:
        return None
    return text[values[0]:values[1]:values[2]]


def _fold_call(node: ast.Call, names: dict[str, str]) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "chr" and len(node.args) == 1:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int) and 0 <= arg.value < 0x110000:
            return chr(arg.value)
        return None
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "join" and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
        sep = _fold(func.value, names)
        parts = [_fold(e, names) for e in node.args[0].elts]
        if sep is not None and all(p is not None for p in parts):
            return sep.join(parts)  # type: ignore[arg-type]
        return None
    if func.attr == "decode" and isinstance(func.value, ast.Call):
        inner = func.value
        if dotted(inner.func) == "bytes.fromhex" and len(inner.args) == 1:
            hexed = _fold(inner.args[0], names)
            try:
                return bytes.fromhex(hexed).decode("utf-8", "replace") if hexed is not None else None
            except ValueError:
                return None
        return _fold(func.value, names)
    return None


def parts_of(node: ast.AST, names: dict[str, str]) -> list[str]:
    """The constant pieces an assembled string is made of (for 'no part spells it alone')."""
    pieces: list[str] = []
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, (str, bytes)):
            pieces.append(child.value if isinstance(child.value, str) else child.value.decode("latin-1"))
        elif isinstance(child, ast.Name) and child.id in names:
            pieces.append(names[child.id])
    return pieces


def enclosing_function(facts: FileFacts, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    current = facts.parent(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
        current = facts.parent(current)
    return current
