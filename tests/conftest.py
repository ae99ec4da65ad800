"""Every test keeps `eval` history in its own temporary file, never the user's."""

import pytest


@pytest.fixture(autouse=True)
def _private_history(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("NVFP4_HISTORY_DB", str(tmp_path_factory.mktemp("history") / "history.db"))
