"""Every test run keeps the user's files untouched: one fixture points every user path into a temporary folder.

The harness writes per-user state in a few places: the `eval` history (``$NVFP4_HISTORY_DB``, else
platformdirs' data folder under ``$HOME``), the calibration and vendor caches (results/ in the
checkout, else ``$NVFP4_CALIBRATION_CACHE`` / ``$NVFP4_VENDOR_CACHE``), the client's config
(``$NVFP4_CONFIG``, else ~/.config), and the caches of Triton and torch extensions under ``$HOME``.
``_private_user_paths`` moves all of them, for the whole session, before any fixture or test runs
(subprocesses inherit it: a server a test starts, a `make` recipe), and ``_fresh_history`` gives
each test an empty history of its own; ``_user_files_untouched`` fails the session if a run of the
tests' files landed in the real history or a file under the checkout's results/ changed anyway;
tests/test_user_paths.py checks that each of the harness's own paths resolves inside the temporary home.
"""

from __future__ import annotations

import contextlib
import gc
import site
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.user_paths import PATH_VARIABLES

REPO = Path(__file__).resolve().parent.parent



def _real_history() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("nvfp4-harness")) / "history.db"


def _runs_after(db: Path, last_id: int) -> list[tuple[int, str]]:
    """(id, submission_path) of the runs kept in ``db`` after ``last_id``; read-only, never creates it."""
    if not db.is_file():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
            return connection.execute("SELECT id, submission_path FROM runs WHERE id > ?", (last_id,)).fetchall()
    except sqlite3.Error:
        return []


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file under ``root``."""
    return {str(path): (path.stat().st_mtime_ns, path.stat().st_size) for path in root.rglob("*") if path.is_file()}


@pytest.fixture(scope="session", autouse=True)
def _user_files_untouched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fails the session when a test wrote into this checkout's results/ or kept a run of one of its
    files in the user's own history. (The history is shared by every checkout and by the user's own
    runs meanwhile: only runs of files in this checkout or the tests' temporary folders count.)"""
    history, results = _real_history(), REPO / "results"
    last_id = max((run_id for run_id, _ in _runs_after(history, -1)), default=0)
    before = _snapshot(results)
    yield
    ours = (REPO, tmp_path_factory.getbasetemp().resolve())
    kept = [path for _, path in _runs_after(history, last_id)
            if Path(path).is_absolute() and any(Path(path).resolve().is_relative_to(root) for root in ours)]
    after = _snapshot(results)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    assert not kept, f"the tests kept runs in the user's own history {history}: {', '.join(kept[:5])}"
    assert not changed, f"the tests wrote into the checkout's results/: {', '.join(changed[:5])}"


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


@pytest.fixture(autouse=True)
def _no_blank_workers_between_tests() -> Iterator[None]:
    """A test that runs ``run_job`` switches its process to keeping a blank worker ahead; the next
    test starts without one (its worker must see that test's environment) and without the switch."""
    from harness.judge.worker_link import blank_workers

    yield
    blank_workers.SHELF.ahead = False
    blank_workers.SHELF.discard()


def pytest_sessionfinish() -> None:
    """Tests run evaluations in this process, and the parent freezes its objects before its first one
    (harness/contract/long_lived.py): thawed at the end, so that the interpreter's last collection frees them
    (nanobind reports Triton's objects as leaked otherwise)."""
    gc.unfreeze()
