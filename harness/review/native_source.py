"""Inline C/C++/CUDA source inside Python strings, read by the same classes as the Python rules.

Where it comes from: strings passed to torch.utils.cpp_extension.load_inline, cupy's RawKernel
and the like (folded when assembled from parts), and any string that reads as C. What is read:
native reach, processes and threads, the interpreter's state, streams and graphs, persisting-L2
windows (static_patterns.NATIVE_TEXT), and names hidden from a text search: ``##`` token pastes
(``cuda##Event##Record``, a function-like macro called with the halves of a name) and adjacent
string literals (``"cudaSt" "reamCreate"``) that spell a watched name.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from harness.review import static_patterns as patterns
from harness.review.ast_names import FileFacts, fold
from harness.review.findings import Flag, FlagClass, flag_at

PASTE = re.compile(r"\w+(?:\s*##\s*\w+)+")
MACRO = re.compile(r"#\s*define\s+(\w+)\s*\(([^)]*)\)\s*(.*)")
ADJACENT_LITERALS = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")+')
MIN_SOURCE_CHARS = 24


@dataclass(frozen=True)
class InlineSource:
    text: str
    line: int  # the line of the file where the text's first line is


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def inline_sources(facts: FileFacts) -> list[InlineSource]:
    """Every string that is C/C++/CUDA source: C-looking strings, and builder arguments (folded), each
    text once, at the line where it is written (a name is followed to the value it is bound to)."""
    found: dict[str, InlineSource] = {}
    for node in ast.walk(facts.tree):
        if isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)) and not facts.is_prose(node):
            text = fold(node, facts.strings)
            if text and len(text) >= MIN_SOURCE_CHARS and patterns.INLINE_SOURCE.search(text):
                found.setdefault(text, InlineSource(text, node.lineno))
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Call) and _call_name(node) in patterns.INLINE_BUILDERS:
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                for value in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                    written = facts.bound_once.get(value.id, value) if isinstance(value, ast.Name) else value
                    text = fold(value, facts.strings)
                    if text:
                        found.setdefault(text, InlineSource(text, written.lineno))
    return sorted(found.values(), key=lambda s: s.line)


def _pasted_names(text: str) -> Iterator[tuple[str, int]]:
    """(name, offset) of every name assembled by ## or by a ##-macro called with its halves."""
    for match in PASTE.finditer(text):
        yield re.sub(r"\s*##\s*", "", match.group()), match.start()
    for macro in MACRO.finditer(text):
        name, params, body = macro.group(1), [p.strip() for p in macro.group(2).split(",")], macro.group(3)
        if "##" not in body:
            continue
        for call in re.finditer(rf"\b{re.escape(name)}\s*\(([^()]*)\)", text):
            args = [a.strip() for a in call.group(1).split(",")]
            if len(args) != len(params) or call.start() == macro.start(1):
                continue
            expanded = body
            for param, arg in zip(params, args):
                expanded = re.sub(rf"\b{re.escape(param)}\b", arg, expanded)
            for pasted in PASTE.finditer(expanded):
                yield re.sub(r"\s*##\s*", "", pasted.group()), call.start()


def _joined_literals(text: str) -> Iterator[tuple[str, str, int]]:
    """(joined text, its pieces, offset) of adjacent string literals."""
    for match in ADJACENT_LITERALS.finditer(text):
        pieces = re.findall(r'"((?:[^"\\\n]|\\.)*)"', match.group())
        yield "".join(pieces), "\n".join(pieces), match.start()


def _line_of(source: InlineSource, offset: int) -> int:
    return source.line + source.text.count("\n", 0, offset)


def scan_text(source: InlineSource) -> Iterator[tuple[FlagClass, str, int]]:
    """Flags of one inline source: the NATIVE_TEXT rules line by line, then hidden names."""
    for number, text in enumerate(source.text.splitlines()):
        for pattern, klass, what in patterns.NATIVE_TEXT:
            if match := pattern.search(text):
                yield klass, f"{what} ({match.group()[:60]})", source.line + number
    for name, offset in _pasted_names(source.text):
        if patterns.WATCHED.search(name):
            yield FlagClass.OBFUSCATION, f"token-pasted name in inline source spells '{name[:60]}'", \
                _line_of(source, offset)
    for joined, pieces, offset in _joined_literals(source.text):
        match = patterns.WATCHED.search(joined)
        if match and match.group() not in pieces:
            yield FlagClass.OBFUSCATION, f"adjacent C strings spell '{match.group()[:60]}'", _line_of(source, offset)


def scan(facts: FileFacts, file: str) -> list[Flag]:
    seen: set[tuple[FlagClass, str, int]] = set()
    flags = []
    for source in inline_sources(facts):
        for finding in scan_text(source):
            if finding not in seen:
                seen.add(finding)
                klass, what, line = finding
                flags.append(flag_at(klass, what, file, line, facts.line(line)))
    return flags
