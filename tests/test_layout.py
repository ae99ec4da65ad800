"""The trust boundary is a folder boundary, and the tests hold it there.

``harness/worker/`` runs beside the untrusted submission: it may use the shared contracts
(``harness.contract``) and the problem and format code it runs, never the judging side, the
commands or the organizer's services. The judge never imports worker code (it looks the compiled
core up by name only). ``harness.contract`` depends on nothing else of the harness.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[1] / "harness"
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
