"""The static read's own AST rules over one Python file: imports, names, strings, patches, obfuscation.

Each rule reads the tables of static_patterns.py and reports one flag per (class, line, finding).
The data-pointer caches and the inline C/C++ source have their own modules (cache_rules.py,
native_source.py). Nothing here runs the file: it is parsed, never imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from harness.review import static_patterns as patterns
from harness.review.ast_names import FileFacts, enclosing_function, fold, parts_of
from harness.review.findings import Flag, FlagClass, flag_at

Finding = tuple[FlagClass, str, int]  # class, what was found, line


def _matches(name: str, key: str) -> bool:
    return name == key or name.startswith(key + ".")


def _imported_module(name: str) -> tuple[FlagClass, str] | None:
    return next((rule for key, rule in patterns.IMPORTED_MODULES.items() if _matches(name, key)), None)


def imports(facts: FileFacts) -> Iterator[Finding]:
    """Modules whose import alone is a flag, by statement or by __import__/import_module with a constant."""
    for node in ast.walk(facts.tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and facts.canonical(node.func) in ("__import__", "importlib.import_module"):
            name = fold(node.args[0], facts.strings) if node.args else None
            if name is None:
                yield FlagClass.OBFUSCATION, "imports a module by a computed name", node.lineno
                continue
            names = [name]
        for found in {rule for name in names if (rule := _imported_module(name))}:
            yield found[0], found[1], node.lineno


def _outermost_chain(facts: FileFacts, node: ast.AST) -> bool:
    parent = facts.parent(node)
    return not (isinstance(parent, ast.Attribute) and parent.value is node)


def used_names(facts: FileFacts) -> Iterator[Finding]:
    """Names and attributes that are a flag wherever they appear (calls or references)."""
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Attribute) and node.attr in patterns.ATTRIBUTES:
            klass, what = patterns.ATTRIBUTES[node.attr]
            yield klass, what, node.lineno
        if not isinstance(node, (ast.Name, ast.Attribute)) or not _outermost_chain(facts, node):
            continue
        name = facts.canonical(node)
        for key, (klass, what) in patterns.USED_NAMES.items():
            if name and _matches(name, key):
                if klass == FlagClass.PROCESS_TRICKS and "thread" in what and enclosing_function(facts, node) is None:
                    what += " at import"
                yield klass, what, node.lineno
                break


def _identifiers(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name
    elif isinstance(node, ast.keyword) and node.arg:
        yield node.arg
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value


def strings_and_words(facts: FileFacts) -> Iterator[Finding]:
    """/proc paths in strings; persisting-L2 words in identifiers, keywords and strings (each name once)."""
    named: set[str] = set()
    for node in sorted(ast.walk(facts.tree), key=lambda n: getattr(n, "lineno", 0)):
        line = getattr(node, "lineno", None)
        inline = isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(
            patterns.INLINE_SOURCE.search(node.value))
        if line is None or facts.is_prose(node) or inline:
            continue  # words about the code, or C source (native_source.py reads it line by line)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "/proc/" in node.value:
            yield FlagClass.NATIVE_REACH, "reads /proc (memory maps, memory or environment of a process)", line
        for word in _identifiers(node):
            squashed = word.lower().replace("_", "")
            hit = next((w for w in patterns.L2_WORDS if w in squashed), None)
            if hit and squashed not in named:
                named.add(squashed)  # each name once, where it first appears
                shown = word if len(word) <= 60 and "\n" not in word else f"{hit}' in '{word.split()[0][:40]}..."
                yield FlagClass.PERSISTING_L2, f"persisting-L2 name '{shown}'", line
                break


def _module_rooted(facts: FileFacts, node: ast.AST) -> str | None:
    """The canonical name of an expression rooted at an imported module (torch.cuda.Event), else None."""
    name = facts.canonical(node)
    if name is None:
        return None
    head = name.split(".")[0]
    roots = {value.split(".")[0] for value in facts.aliases.values()}
    return name if head in roots else None


def monkeypatches(facts: FileFacts) -> Iterator[Finding]:
    """Assignments (and setattr / delattr / del) to attributes of imported modules or their classes."""
    for node in ast.walk(facts.tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            owner = _module_rooted(facts, node.args[0]) if node.args else None
            if owner:
                attribute = fold(node.args[1], facts.strings) if len(node.args) > 1 else None
                yield FlagClass.MONKEYPATCH, f"{node.func.id} on {owner}.{attribute or '<computed>'}", node.lineno
            continue
        for target in targets:
            leaves = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            for leaf in leaves:
                leaf = leaf.value if isinstance(leaf, ast.Starred) else leaf
                if isinstance(leaf, ast.Attribute) and (owner := _module_rooted(facts, leaf.value)):
                    yield FlagClass.MONKEYPATCH, f"replaces {owner}.{leaf.attr}", node.lineno


def _assembly(node: ast.AST) -> bool:
    return (isinstance(node, (ast.BinOp, ast.JoinedStr))
            or (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice))
            or (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))))


def assembled_strings(facts: FileFacts) -> Iterator[Finding]:
    """Text built from parts that spells a watched name none of its parts spells alone."""
    for node in ast.walk(facts.tree):
        parent = facts.parent(node)
        inner = parent is not None and _assembly(parent) and fold(parent, facts.strings) is not None
        if not _assembly(node) or inner:
            continue  # an inner piece: the enclosing assembly is read instead
        text = fold(node, facts.strings)
        if not text:
            continue
        pieces = parts_of(node, facts.strings)
        for match in patterns.WATCHED.finditer(text):
            if not any(match.group() in piece for piece in pieces):
                yield FlagClass.OBFUSCATION, f"text assembled from parts spells '{match.group()[:60]}'", node.lineno
                break


def obfuscation(facts: FileFacts) -> Iterator[Finding]:
    """Computed attribute names, encoded or compressed blobs and the calls that decode them."""
    blob_modules = {key for key, (klass, _) in patterns.IMPORTED_MODULES.items() if klass == FlagClass.OBFUSCATION}
    for node in ast.walk(facts.tree):
        if isinstance(node, ast.Call):
            func = facts.canonical(node.func)
            if func in ("getattr", "setattr", "delattr", "hasattr") and len(node.args) > 1:
                if fold(node.args[1], facts.strings) is None:
                    yield FlagClass.OBFUSCATION, f"{func} with a computed attribute name", node.lineno
            elif (isinstance(node.func, ast.Attribute) and node.func.attr in patterns.DECODERS
                  and func and func.split(".")[0] in blob_modules):
                yield FlagClass.OBFUSCATION, f"decodes a blob ({func})", node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            if node.value.startswith(patterns.BLOB_HEADERS) and len(node.value) > 16:
                yield FlagClass.OBFUSCATION, f"a compressed or serialised blob of {len(node.value)} bytes", node.lineno
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and not facts.is_prose(node)
              and patterns.BASE64_BLOB.match(node.value)):
            yield FlagClass.OBFUSCATION, f"a base64-like blob of {len(node.value)} characters", node.lineno


RULES = (imports, used_names, strings_and_words, monkeypatches, assembled_strings, obfuscation)


def scan(facts: FileFacts, file: str) -> list[Flag]:
    """Every rule over one parsed file, one flag per (class, line, finding)."""
    seen: set[Finding] = set()
    flags = []
    for rule in RULES:
        for finding in rule(facts):
            if finding in seen:
                continue
            seen.add(finding)
            klass, what, line = finding
            flags.append(flag_at(klass, what, file, line, facts.line(line)))
    return flags
