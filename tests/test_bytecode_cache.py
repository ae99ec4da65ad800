"""The bytecode cache: used only where every start would compile from source, written by the parent
under the harness's cache (never beside the sources), read by its children, the worker writing none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import bytecode_cache
from harness.judge.worker_link.worker_spawn import worker_environment

SOURCE = "VALUE = 1\n"
CHANGED = "VALUE = 2\n"  # the same size: with the old mtime restored, only the bytecode tells them apart


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package with no bytecode on sys.path, Python set not to write any, no prefix chosen."""
    folder = tmp_path / "site" / "probe_pkg"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(folder.parent))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setenv(bytecode_cache.ENV, str(tmp_path / "bytecode"))
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", "")  # recorded, so that what enable() sets is undone after
    monkeypatch.delenv("PYTHONPYCACHEPREFIX")
    yield folder
    sys.modules.pop("probe_pkg", None)


def test_needed_only_where_every_start_would_compile(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert bytecode_cache.needed("probe_pkg")
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert not bytecode_cache.needed("probe_pkg"), "Python writes it beside the source itself"
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert bytecode_cache.needed("probe_pkg"), "a read-only folder: nothing would be written"


def test_not_needed_with_bytecode_or_a_prefix(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "pycache_prefix", "/somewhere/chosen")
    assert not bytecode_cache.needed("probe_pkg"), "the user's own prefix is kept"
    monkeypatch.setattr(sys, "pycache_prefix", None)
    subprocess.run([sys.executable, "-m", "py_compile", str(package / "__init__.py")], check=True)
    assert not bytecode_cache.needed("probe_pkg"), "the package ships its bytecode"
    assert not bytecode_cache.needed("no_such_package_anywhere")


def test_the_parent_writes_under_the_cache_and_its_children_read_it(package: Path, tmp_path: Path) -> None:
    folder = bytecode_cache.enable("probe_pkg")
    assert folder == tmp_path / "bytecode"
    assert os.environ["PYTHONPYCACHEPREFIX"] == str(folder)
    import probe_pkg

    assert Path(probe_pkg.__cached__).is_file() and Path(probe_pkg.__cached__).is_relative_to(folder)
    assert not (package / "__pycache__").exists(), "nothing beside the sources"
    source = package / "__init__.py"
    written = source.stat()
    source.write_text(CHANGED)
    os.utime(source, ns=(written.st_atime_ns, written.st_mtime_ns))
    child = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(package.parent)}
    read = subprocess.run([sys.executable, "-c", "import probe_pkg; print(probe_pkg.VALUE)"], env=child,
                          capture_output=True, text=True, check=True)
    assert read.stdout.strip() == "1", "the child compiled the source instead of reading the parent's bytecode"


def test_enable_leaves_python_alone_where_refused(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bytecode_cache, "evaluators_folder", lambda folder, make: False)
    assert bytecode_cache.enable("probe_pkg") is None
    assert sys.pycache_prefix is None and sys.dont_write_bytecode
    assert "PYTHONPYCACHEPREFIX" not in os.environ


def test_enable_leaves_python_alone_when_turned_off(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bytecode_cache.ENV, "off")
    assert bytecode_cache.folder() is None
    assert bytecode_cache.enable("probe_pkg") is None
    assert sys.pycache_prefix is None and sys.dont_write_bytecode


def test_the_worker_reads_the_cache_and_writes_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", "/var/cache/nvfp4-harness/bytecode")
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    env = worker_environment("cpu", None)
    assert env["PYTHONPYCACHEPREFIX"] == "/var/cache/nvfp4-harness/bytecode"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_warm_writes_ahead_what_a_run_will_import(package: Path, tmp_path: Path) -> None:
    """What `make install` runs: every module named compiled into the cache now, a missing one passed over."""
    folder = bytecode_cache.warm("probe_pkg", ["probe_pkg", "no_such_module_anywhere"])
    assert folder == tmp_path / "bytecode"
    import probe_pkg

    assert Path(probe_pkg.__cached__).is_file() and Path(probe_pkg.__cached__).is_relative_to(folder)


def test_warm_writes_what_a_child_interpreter_imports_as_it_starts(package: Path, tmp_path: Path) -> None:
    """A worker's interpreters start under the cache: what Python imports before any line of ours (here
    ``encodings``, which every start imports) must be there too, written by a child started as they are."""
    import encodings

    folder = tmp_path / "bytecode"
    assert bytecode_cache.warm_child_start(folder, [])
    source = Path(encodings.__file__)
    written = list((folder / source.parent.relative_to(source.anchor)).glob("**/__init__*.pyc"))
    assert written, f"no bytecode of {source} under {folder}"


def test_warm_writes_nothing_where_python_keeps_its_own(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert bytecode_cache.warm("probe_pkg", ["probe_pkg"]) is None


def test_the_harness_modules_it_warms_exist() -> None:
    """Every module name warm imports by default is one of this install (a renamed module would be passed
    over in silence, and its bytecode no longer written ahead)."""
    import importlib.util

    missing = [name for name in bytecode_cache.harness_modules() if importlib.util.find_spec(name) is None]
    assert missing == []  # triton and jinja2 are dependencies of this install
