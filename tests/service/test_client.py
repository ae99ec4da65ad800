"""Where the client finds its server and token: flag, then environment, then the config file."""

from __future__ import annotations

import pytest

from harness.service.client import ClientError, resolve_connection

from .conftest import harness


@pytest.fixture
def config(tmp_path, monkeypatch):
    for name in ("NVFP4_SERVER", "NVFP4_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "client.yml"
    monkeypatch.setenv("NVFP4_CONFIG", str(path))
    return path


def test_flags_beat_the_environment_which_beats_the_config_file(config, monkeypatch):
    config.write_text("server: http://config:1/\ntoken: from-config\n")
    assert resolve_connection(None, None) == resolve_connection("http://config:1", "from-config")
    assert resolve_connection(None, None).server == "http://config:1"
    monkeypatch.setenv("NVFP4_SERVER", "http://env:2")
    monkeypatch.setenv("NVFP4_TOKEN", "from-env")
    assert (resolve_connection(None, None).server, resolve_connection(None, None).token) == ("http://env:2",
                                                                                             "from-env")
    assert resolve_connection("http://flag:3", "from-flag").token == "from-flag"


def test_a_missing_server_or_token_is_one_line(config):
    with pytest.raises(ClientError, match="no server"):
        resolve_connection(None, "t")
    with pytest.raises(ClientError, match="no token"):
        resolve_connection("http://x", None)
    config.write_text("- a list\n")
    with pytest.raises(ClientError, match="expected 'server: URL'"):
        resolve_connection(None, None)


def test_a_file_that_does_not_parse_never_leaves_the_machine(tmp_path):
    broken = tmp_path / "k.py"
    broken.write_text("def custom_kernel(data)\n")
    run = harness("submit", str(broken), "--server", "http://127.0.0.1:9", "--token", "t")
    assert run.returncode == 113
    assert run.stderr.strip().splitlines() == [f"submit: error: {broken}: syntax error at line 1: expected ':'; "
                                               "fix it and run again"]
