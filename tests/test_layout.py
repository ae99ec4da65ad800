"""The trust boundary is a folder boundary, and the tests hold it there.

``harness/worker/`` runs beside the untrusted submission: it may use the shared contracts
(``harness.contract``) and the problem and format code it runs, never the judging side, the
commands or the organizer's services. The judge never imports worker code (it looks the compiled
core up by name only). ``harness.contract`` depends on nothing else of the harness. The wire's
vocabulary is one module, ``harness/contract/messages.py``: nothing else spells a message.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
SCRIPTS = HARNESS.parent / "scripts"
MESSAGES = HARNESS / "contract" / "messages.py"
ALLOWED = {
    "worker": ("harness.worker", "harness.contract", "problems", "reference"),
    "contract": ("harness.contract",),
    "judge": ("harness.judge", "harness.contract", "harness.display", "harness.sol", "problems", "reference"),
}


def is_module(name: str) -> bool:
    """Whether ``from harness import name`` imports a module (not a name such as __version__)."""
    return (HARNESS / name).is_dir() or (HARNESS / f"{name}.py").exists()


def harness_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of harness, problems or reference in a file, nested ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module] if node.module != "harness" else [
                f"harness.{a.name}" if is_module(a.name) else "harness" for a in node.names]
            found += [(node.lineno, m) for m in modules]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in found if m.split(".")[0] in ("harness", "problems", "reference")]


def allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return module == "harness" or any(module == p or module.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_side_imports_only_what_its_side_may(package):
    bad = [f"{path.relative_to(HARNESS.parent)}:{line} imports {module}"
           for path in sorted((HARNESS / package).rglob("*.py"))
           for line, module in harness_imports(path) if not allowed(module, ALLOWED[package])]
    assert not bad, "\n".join(bad)


def test_the_rule_catches_a_worker_module_that_reaches_the_judge(tmp_path):
    """The check itself can fail: a worker file importing the judge is named."""
    planted = tmp_path / "planted.py"
    planted.write_text("def f():\n    from harness.judge import seal\n    from harness import __version__, judge\n")
    assert [m for _, m in harness_imports(planted) if not allowed(m, ALLOWED["worker"])] == [
        "harness.judge", "harness.judge"]


def test_no_two_modules_share_a_name():
    names = [path.stem for path in HARNESS.rglob("*.py") if path.stem != "__init__"]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def message_spellings(path: Path) -> list[tuple[int, str]]:
    """(line, what) for every place a file spells a message itself: the header key that names a
    kind (a header built, read or compared by hand), or a record class that declares a KIND."""
    from harness.contract.messages import KIND_KEY

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and node.value == KIND_KEY:
            found.append((node.lineno, f"the key {KIND_KEY!r}"))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = item.targets if isinstance(item, ast.Assign) else [getattr(item, "target", None)]
                if any(isinstance(target, ast.Name) and target.id == "KIND" for target in targets):
                    found.append((item.lineno, f"a message kind in class {node.name}"))
    return sorted(found)


def test_only_the_messages_module_spells_a_message():
    bad = [f"{path.relative_to(HARNESS.parent)}:{line} spells {what}"
           for path in sorted([*HARNESS.rglob("*.py"), *SCRIPTS.rglob("*.py")]) if path != MESSAGES
           for line, what in message_spellings(path)]
    assert not bad, "\n".join(bad) + "\nsay it with a record of harness.contract.messages"
    assert len([w for _, w in message_spellings(MESSAGES) if w.startswith("a message kind")]) >= 12


def test_the_rule_catches_a_message_spelled_by_hand(tmp_path):
    """The check itself can fail: a header built or read by hand, or a kind declared elsewhere, is named."""
    planted = tmp_path / "planted.py"
    planted.write_text('def f(fd, header):\n    send(fd, {"op": "output"})\n    return header.get("op")\n\n\n'
                       'class Forged:\n    KIND: str = "output"\n')
    assert message_spellings(planted) == [(2, "the key 'op'"), (3, "the key 'op'"),
                                          (7, "a message kind in class Forged")]
