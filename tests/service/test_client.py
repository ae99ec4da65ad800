"""The client: where it finds its server and token (flag, environment, config file), and one line for
a server that is wrong, down, or behind a proxy whose service restarts."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from harness.service.client import ClientError, Connection, follow, resolve_connection

from .conftest import GEMV, free_port, harness


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
    assert run.stderr.rstrip().splitlines() == [f"submit: error: {broken}: syntax error at line 1: expected ':'; "
                                                "fix it and run again", "    def custom_kernel(data)",
                                                "                           ^"]


class FakeService:
    """A loopback HTTP server answering every request with the next of its (status, content type, body)
    answers (the last one repeats): a wrong --server, or a reverse proxy whose service is down."""

    def __init__(self, *answers: tuple[int, str, bytes]) -> None:
        self.answers = list(answers)
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, kind, body = fake.answers.pop(0) if len(fake.answers) > 1 else fake.answers[0]
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = answer

            def log_message(self, *args) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self) -> FakeService:
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


HTML = (200, "text/html", b"<html><body>a web page</body></html>")
DOWN = [(status, "text/html", b"<html>proxy</html>") for status in (502, 503, 504)]
DONE = (200, "application/json", json.dumps({"status": "done", "position": None, "attempts": 1,
                                             "result": {}}).encode())


def test_a_2xx_answer_that_is_not_json_is_one_line(tmp_path):
    with FakeService(HTML) as fake:
        run = harness("submit", str(GEMV), "--server", fake.url, "--token", "t")
    assert run.returncode == 113, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line == (f"submit: error: {fake.url}/submissions answered 200 with something that is not JSON "
                    "(text/html): is --server (or $NVFP4_SERVER) the submission service?")


def test_a_json_answer_of_another_api_is_one_line():
    with FakeService((200, "application/json", b"[1, 2]")) as fake:
        run = harness("submit", str(GEMV), "--server", fake.url, "--token", "t")
    assert run.returncode == 113 and run.stderr.strip().splitlines() == [
        "submit: error: the server's answer lacks id, problem, mode, position: is --server (or $NVFP4_SERVER) "
        "the submission service?"]


def test_following_retries_a_proxys_502_503_504_like_a_lost_connection():
    said: list[str] = []
    with FakeService(*DOWN, DOWN[0], DONE) as fake:
        job = follow(Connection(fake.url, "t"), 7, poll_s=0.01, say=said.append)
    assert job["status"] == "done"
    assert said == ["submission 7: the server is unreachable, retrying", "submission 7: done"]


def test_following_gives_up_on_a_proxy_that_stays_down():
    with FakeService(DOWN[1]) as fake, pytest.raises(ClientError) as error:
        follow(Connection(fake.url, "t"), 7, poll_s=0.01, unreachable_s=0.3, say=lambda line: None)
    assert str(error.value).startswith(f"lost {fake.url} for 0 s ({fake.url} answered 503 Service Unavailable)")


def test_an_unreachable_server_is_one_short_line():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run = harness("submit", str(GEMV), "--server", url, "--token", "t")
    assert run.returncode == 113
    assert run.stderr.strip().splitlines() == [
        f"submit: error: cannot reach {url}: is the service running? check --server or $NVFP4_SERVER"]
