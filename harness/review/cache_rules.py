"""Caches keyed by an input's address or identity (data_ptr, id, _version) whose value reaches the output.

Why "reaches the output": a table of kernel arguments keyed by the addresses it holds is honest
(the shipped grouped GEMM keeps one: its value is the addresses themselves), while an output
replayed for an address the allocator hands out again is the cheat (fresh inputs, same address,
stale answer). So a pointer-keyed cache is flagged when a value read from it is returned by
``custom_kernel`` (or by a function whose result custom_kernel returns, or through a helper that
returns it) or copied into a tensor with ``copy_``; and a comparison of an input's address with a
stored one (a sentinel: "same address as last time") is flagged wherever it is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from harness.review.ast_names import FileFacts, enclosing_function
from harness.review.findings import Flag, FlagClass, flag_at

ENTRY_POINT = "custom_kernel"
READ_METHODS = ("get", "pop", "setdefault", "__getitem__")
POINTER_ATTRIBUTES = ("_version", "_cdata")


def _is_pointer(node: ast.AST) -> bool:
    """data_ptr(), id(x), x._version or x._cdata anywhere in the expression."""
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            func = child.func
            if isinstance(func, ast.Attribute) and func.attr == "data_ptr":
                return True
            if isinstance(func, ast.Name) and func.id == "id" and child.args:
                return True
        elif isinstance(child, ast.Attribute) and child.attr in POINTER_ATTRIBUTES:
            return True
    return False


Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef


def _scope_of(facts: FileFacts, node: ast.AST) -> Scope:
    return enclosing_function(facts, node) or facts.tree


def _tainted(facts: FileFacts) -> dict[int, set[str]]:
    """Per scope (by id), the names bound to a pointer-derived value (directly or through each other)."""
    bound: dict[int, list[tuple[str, ast.AST]]] = {}
    for node in ast.walk(facts.tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            bound.setdefault(id(_scope_of(facts, node)), []).extend((name, node.value) for name in names)
    tainted: dict[int, set[str]] = {}
    for scope, pairs in bound.items():
        names: set[str] = set()
        for _ in range(4):  # a chain of a few assignments is followed
            names |= {name for name, value in pairs if _is_pointer(value) or _uses(value, names)}
        tainted[scope] = names
    return tainted


def _uses(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def _keyed(facts: FileFacts, node: ast.AST, tainted: dict[int, set[str]]) -> bool:
    scope = _scope_of(facts, node)
    return _is_pointer(node) or _uses(node, tainted.get(id(scope), set()) | tainted.get(id(facts.tree), set()))


def _cache_reads(facts: FileFacts, tainted: dict[int, set[str]]) -> Iterator[ast.AST]:
    """Expressions that read a container by a pointer-derived key: c[key], c.get(key), c.pop(key)."""
    for node in ast.walk(facts.tree):
        key: ast.AST | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READ_METHODS:
            key = node.args[0] if node.args else None
        if key is not None and _keyed(facts, key, tainted):
            yield node


def _functions(facts: FileFacts) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in facts.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _returns(function: ast.AST) -> list[ast.expr]:
    return [n.value for n in ast.walk(function) if isinstance(n, ast.Return) and n.value is not None]


def _called(node: ast.AST, functions: dict[str, ast.AST]) -> set[str]:
    return {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in functions}


def _output_functions(facts: FileFacts) -> set[str]:
    """custom_kernel and every module function whose result an output function returns."""
    functions = _functions(facts)
    found = {ENTRY_POINT} & set(functions)
    frontier = set(found)
    while frontier:
        name = frontier.pop()
        for value in _returns(functions[name]):
            for callee in _called(value, functions) - found:
                found.add(callee)
                frontier.add(callee)
    return found


def _carries(function: ast.AST, reads: set[int], helpers: set[str]) -> set[str]:
    """Names in a function bound to a cache read or to a call of a helper that returns one."""
    names: set[str] = set()
    for _ in range(4):
        for node in ast.walk(function):
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if value is not None and _holds(value, reads, helpers, names):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _rebound(node: ast.AST) -> set[str]:
    """Names a comprehension inside ``node`` binds afresh: in ``[c for _, _, c in abc]`` the ``_`` is
    not the function's ``_`` (a carried name there must not taint the comprehension's own)."""
    return {n.id for comp in ast.walk(node) if isinstance(comp, ast.comprehension)
            for n in ast.walk(comp.target) if isinstance(n, ast.Name)}


def _holds(node: ast.AST, reads: set[int], helpers: set[str], names: set[str]) -> bool:
    names = names - _rebound(node)
    for child in ast.walk(node):
        if id(child) in reads or (isinstance(child, ast.Name) and child.id in names):
            return True
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in helpers:
            return True
    return False


def output_caches(facts: FileFacts) -> Iterator[tuple[str, int]]:
    """(what, line) for each pointer-keyed cache read that is returned as the output or copied into one."""
    tainted = _tainted(facts)
    reads = {id(node): node for node in _cache_reads(facts, tainted)}
    if not reads:
        return
    functions = _functions(facts)
    helpers = {name for name, fn in functions.items()
               if any(_holds(v, set(reads), set(), _carries(fn, set(reads), set())) for v in _returns(fn))}
    outputs = _output_functions(facts)
    for name, function in functions.items():
        carried = _carries(function, set(reads), helpers - {name})
        sinks = _returns(function) if name in outputs else []
        sinks += [arg for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr == "copy_" for arg in n.args]
        for sink in sinks:
            if _holds(sink, set(reads), helpers - {name}, carried):
                how = "returned as the output" if sink in _returns(function) else "copied into a tensor"
                yield f"a value cached by data_ptr/id is {how} in {name}()", sink.lineno


def _stored_name(facts: FileFacts, node: ast.AST) -> bool:
    """A module-level name, or an attribute of one or of self: state that outlives the call."""
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    if root is not node and root.id == "self":
        return True
    scope = _scope_of(facts, node)
    if isinstance(scope, ast.Module):
        return False
    declared = any(isinstance(n, (ast.Global, ast.Nonlocal)) and root.id in n.names for n in ast.walk(scope))
    local = any(isinstance(n, ast.Name) and n.id == root.id and isinstance(n.ctx, ast.Store) for n in ast.walk(scope))
    params = {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)}
    return declared or not (local or root.id in params)


def sentinels(facts: FileFacts) -> Iterator[tuple[str, int]]:
    """An input's address or identity compared with one kept from an earlier call."""
    for node in ast.walk(facts.tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(_is_pointer(s) for s in sides) and any(not _is_pointer(s) and _stored_name(facts, s) for s in sides):
            yield "an input's data_ptr/id compared with one kept from an earlier call", node.lineno


def scan(facts: FileFacts, file: str) -> list[Flag]:
    found = sorted(set(output_caches(facts)) | set(sentinels(facts)), key=lambda f: f[1])
    return [flag_at(FlagClass.POINTER_CACHE, what, file, line, facts.line(line)) for what, line in found]
