"""Every test run keeps the user's files untouched: one fixture points every user path into a temporary folder.

The harness writes per-user state in a few places: the `eval` history (``$NVFP4_HISTORY_DB``, else
platformdirs' data folder under ``$HOME``), the calibration and vendor caches (results/ in the
checkout, else ``$NVFP4_CALIBRATION_CACHE`` / ``$NVFP4_VENDOR_CACHE``), the client's config
(``$NVFP4_CONFIG``, else ~/.config), and the caches of Triton and torch extensions under ``$HOME``.
``_private_user_paths`` moves all of them, for the whole session, before any fixture or test runs
(subprocesses inherit it: a server a test starts, a `make` recipe), and ``_fresh_history`` gives
each test an empty history of its own; ``_user_files_untouched``
fails the session if a file under the real ones changed anyway. tests/test_user_paths.py checks
that each of the harness's own paths resolves inside the temporary home.
"""

from __future__ import annotations

import site
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.user_paths import PATH_VARIABLES

REPO = Path(__file__).resolve().parent.parent



def _real_user_files() -> list[Path]:
    """The user's own files the harness could write, resolved from the real environment."""
    import platformdirs

    data = Path(platformdirs.user_data_dir("nvfp4-harness"))
    return [data, REPO / "results", Path("~/.config/nvfp4-harness").expanduser()]


def _snapshot(roots: list[Path]) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file under ``roots``."""
    seen = {}
    for root in roots:
        files = [root] if root.is_file() else (root.rglob("*") if root.is_dir() else [])
        for path in files:
            if path.is_file():
                stat = path.stat()
                seen[str(path)] = (stat.st_mtime_ns, stat.st_size)
    return seen


@pytest.fixture(scope="session", autouse=True)
def _user_files_untouched() -> Iterator[None]:
    """Fails the session when any test wrote into the user's history, caches or results/."""
    roots = _real_user_files()
    before = _snapshot(roots)
    yield
    after = _snapshot(roots)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    assert not changed, f"the tests wrote into the user's own files: {', '.join(changed[:5])}"


@pytest.fixture(scope="session", autouse=True)
def _private_user_paths(_user_files_untouched: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """HOME and every user path variable point into one temporary folder for the whole session."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONUSERBASE", site.getuserbase())  # packages installed with --user still import
        patch.setenv("HOME", str(home))
        for name, relative in PATH_VARIABLES.items():
            patch.setenv(name, str(home / relative))
        yield home


@pytest.fixture(autouse=True)
def _fresh_history(_private_user_paths: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty history of its own (run ids count from 1), inside the private home."""
    folder = _private_user_paths / "history"
    folder.mkdir(exist_ok=True)
    monkeypatch.setenv("NVFP4_HISTORY_DB", tempfile.mkdtemp(dir=folder) + "/history.db")
