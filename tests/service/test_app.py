"""The service end to end: real uvicorn on a loopback port, driven by the real client and by HTTP."""

from __future__ import annotations

import html
import json
import re
import socket

import pytest
import requests

from harness.service.body_cap import FORM_OVERHEAD_BYTES
from tests.leaderboard.test_browser import CHROMIUM, IN_CI, chromium, png_pixels

from .conftest import DUAL, GEMV, SECRET_SEED, add_user, bearer, harness, wait_done

# Seconds differ between two runs, and with them the width of the table's rule (a case past 10 s on a busy machine).
PASSED_IN = re.compile(r"passed in [\d.]+ s|─+|\nWall time [^\n]*")


@pytest.fixture(scope="module")
def service(service_factory, tmp_path_factory):
    """One server with small limits; users ada and bob."""
    server = service_factory("--max-file-bytes", "20000", "--deadline", "nvfp4_gemm=2000-01-01T00:00:00Z",
                             "--per-hour", "50", "--max-unfinished", "3")
    tokens = {name: add_user(server.db, name) for name in ("ada", "bob")}
    server.start()
    return server, tokens


@pytest.fixture(scope="module")
def ranked(service, tmp_path_factory):
    """A leaderboard-mode run through the client (on the CPU: stored, listed, not rankable)."""
    server, tokens = service
    out = tmp_path_factory.mktemp("ranked") / "result.json"
    run = harness("submit", str(DUAL.relative_to(DUAL.parents[2])), "--mode", "leaderboard", "--server", server.url,
                  "--token", tokens["ada"], "--poll-s", "0.2", "--json", str(out), timeout=180)
    return run, json.loads(out.read_text()) if out.is_file() else None


def post(server, token: str | None, files: dict, **fields) -> requests.Response:
    headers = bearer(token) if token else {}
    return requests.post(f"{server.url}/submissions", headers=headers, files=files, data=fields, timeout=30)


def gemv_file() -> dict:
    return {"file": ("torch_reference.py", GEMV.read_bytes())}


def test_submit_prints_the_report_of_make_eval(service):
    server, tokens = service
    path = "submissions/nvfp4_gemv/torch_reference.py"
    remote = harness("submit", path, "--server", server.url, "--token", tokens["ada"], "--poll-s", "0.2")
    local = harness("eval", "nvfp4_gemv", path, "--mode", "test", "--device", "cpu")
    assert remote.returncode == local.returncode == 0, remote.stderr
    assert PASSED_IN.sub("", remote.stdout) == PASSED_IN.sub("", local.stdout)
    assert "Result: PASS (exit code 0)" in remote.stdout
    progress = remote.stderr
    assert ": queued, position 1" in progress and "running (attempt 1)" in progress and ": done" in progress


def test_a_failing_file_exits_with_the_code_of_make_eval(service, tmp_path):
    server, tokens = service
    wrong = tmp_path / "wrong.py"
    # named as the contest's files name a leaderboard: the service runs it as nvfp4_gemv (112, not 113)
    wrong.write_text("#!POPCORN leaderboard modal_nvfp4_gemv\nimport torch\n\ndef custom_kernel(data):\n"
                     "    return torch.zeros_like(data[-1])\n")
    remote = harness("submit", str(wrong), "--server", server.url, "--token", tokens["ada"], "--poll-s", "0.2")
    assert remote.returncode == 112, remote.stdout + remote.stderr
    assert "Result: FAIL (exit code 112)" in remote.stdout


def test_a_ranked_run_is_stored_on_the_leaderboard_under_the_user(service, ranked):
    server, tokens = service
    run, result = ranked
    assert run.returncode == 0, run.stderr
    assert result["mode"] == "leaderboard" and result["status"] == "passed"
    assert result["rankable"] is False and result["device"]["type"] == "cpu"  # CPU wall clock is never ranked
    assert "no timing: it needs a GPU" in run.stdout
    board = requests.get(f"{server.url}/leaderboards/nvfp4_dual_gemm", headers=bearer(tokens["bob"]), timeout=10)
    assert board.status_code == 200
    board = board.json()
    assert board["ranking"] == []
    [entry] = board["not_rankable"]
    assert entry["author"] == "ada" and entry["note"] == "not rankable (cpu)"
    assert entry["file"] == "torch_reference.py"


def test_the_secret_seed_appears_in_no_response_page_or_log(service, ranked):
    server, tokens = service
    assert ranked[0].returncode == 0
    secret_forms = (str(SECRET_SEED), hex(SECRET_SEED))
    ids = [job["id"] for job in requests.get(f"{server.url}/submissions", headers=bearer(tokens["ada"]),
                                             timeout=10).json()]
    bodies = [requests.get(f"{server.url}{path}", headers=bearer(tokens["ada"]), timeout=10).text
              for path in ["/", "/nvfp4_dual_gemm/index.html", "/nvfp4_dual_gemm/leaderboard.json",
                           "/nvfp4_dual_gemm/LEADERBOARD.md", "/leaderboards/nvfp4_dual_gemm", "/submissions",
                           *(f"/submissions/{i}" for i in ids)]]
    for text in [*bodies, ranked[0].stdout, ranked[0].stderr, server.log.read_text()]:
        assert not any(form in text for form in secret_forms)


BAD_REQUESTS = {
    # name: (token, files, fields, status, words in the line)
    "too large": ("ada", {"file": ("big.py", b"#" * 30000 + b"\n")}, {}, 413, "too large"),
    "unknown problem": ("ada", "gemv", {"problem": "nvfp4_conv"}, 400, "unknown problem 'nvfp4_conv'"),
    "bad mode": ("ada", "gemv", {"mode": "fastest"}, 400, "bad mode 'fastest'"),
    "missing token": (None, "gemv", {}, 401, "missing token"),
    "wrong token": ("nvfp4_0123456789abcdef_" + "x" * 40, "gemv", {}, 401, "token refused"),
    "malformed token": ("letmein", "gemv", {}, 401, "token refused"),
    "not python": ("ada", {"file": ("k.py", b"def custom_kernel(data)\n    return data\n")}, {}, 400,
                   "syntax error at line 1"),
    "no problem": ("ada", {"file": ("k.py", b"def custom_kernel(data):\n    return data\n")}, {}, 400,
                   "no problem"),
    "no file": ("ada", {}, {"mode": "test"}, 400, "file"),
    "after the deadline": ("ada", {"file": ("k.py", b"def custom_kernel(data):\n    return data\n")},
                           {"problem": "nvfp4_gemm", "mode": "leaderboard"}, 403, "deadline"),
    # the parser's depth limits (RecursionError, MemoryError) are reached by small files
    "nested subscripts": ("ada", {"file": ("k.py", b"a" + b"[0]" * 6000)}, {}, 400, "too deeply nested"),
    "nested minus signs": ("ada", {"file": ("k.py", b"-" * 19000 + b"1")}, {}, 400, "k.py: "),
}


@pytest.mark.parametrize("name", BAD_REQUESTS)
def test_a_bad_request_gets_a_4xx_and_one_line_and_queues_nothing(service, name):
    server, tokens = service
    token, files, fields, status, words = BAD_REQUESTS[name]
    token = tokens.get(token, token) if token else None
    before = requests.get(f"{server.url}/submissions", headers=bearer(tokens["ada"]), timeout=10).json()
    answer = post(server, token, gemv_file() if files == "gemv" else files, **fields)
    assert answer.status_code == status, answer.text
    assert list(answer.json()) == ["error"]
    line = answer.json()["error"]
    assert words in line and "\n" not in line
    after = requests.get(f"{server.url}/submissions", headers=bearer(tokens["ada"]), timeout=10).json()
    assert after == before


MULTIPART_HEAD = (b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"k.py\"\r\n"
                  b"Content-Type: text/x-python\r\n\r\n")


def test_a_chunked_upload_is_refused_once_it_passes_the_limit_without_reading_on(service):
    """No Content-Length and no token: 413 as soon as the cap is passed, not after the body's end."""
    server, _ = service
    data = MULTIPART_HEAD + b"#" * (20000 + FORM_OVERHEAD_BYTES)
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(b"POST /submissions HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n"
                     b"Content-Type: multipart/form-data; boundary=b\r\n\r\n")
        sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))  # and never the last chunk: the body has no end
        answer = sock.makefile("rb").read()  # until the server closes the connection
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), answer[:300]
    line = json.loads(body)["error"]
    assert line.startswith("request too large: over ") and line.endswith("the file limit is 20000")


def test_a_chunked_upload_under_the_limit_is_accepted(service):
    server, tokens = service
    parts = [MULTIPART_HEAD, GEMV.read_bytes(), b"\r\n--b--\r\n"]  # a generator: requests sends it chunked
    answer = requests.post(f"{server.url}/submissions", headers={**bearer(tokens["ada"]), "Content-Type":
                                                                 "multipart/form-data; boundary=b"},
                           data=iter(parts), timeout=30)
    assert answer.status_code == 200, answer.text
    assert wait_done(server, tokens["ada"], answer.json()["id"])["result"]["status"] == "passed"


@pytest.mark.parametrize("path", ["/submissions/99999999999999999999999", "/submissions/99999999999999999999999/code",
                                  "/submissions/9223372036854775808", "/submissions/0/code", "/submissions/-1"])
def test_an_id_beyond_sqlites_integers_is_no_submission(service, path):
    server, tokens = service
    answer = requests.get(server.url + path, headers=bearer(tokens["ada"]), timeout=10)
    assert answer.status_code == 404, answer.text
    assert answer.json() == {"error": f"no submission {path.split('/')[2]} of yours"}


def test_the_client_says_when_the_token_is_refused(service):
    server, _ = service
    run = harness("submit", str(GEMV), "--server", server.url, "--token", "nvfp4_0123456789abcdef_" + "y" * 40)
    assert run.returncode == 113
    assert run.stderr.strip().splitlines()[-1].startswith("submit: error: the server refused the token")
    assert run.stdout == ""


def test_a_second_user_cannot_read_the_first_users_code_or_results(service):
    server, tokens = service
    job = post(server, tokens["ada"], gemv_file(), mode="test").json()
    done = wait_done(server, tokens["ada"], job["id"])
    assert done["result"]["status"] == "passed"
    own = requests.get(f"{server.url}/submissions/{job['id']}/code", headers=bearer(tokens["ada"]), timeout=10)
    assert own.status_code == 200 and own.text == GEMV.read_text()
    for path in (f"/submissions/{job['id']}", f"/submissions/{job['id']}/code"):
        other = requests.get(server.url + path, headers=bearer(tokens["bob"]), timeout=10)
        assert other.status_code == 404 and other.json() == {"error": f"no submission {job['id']} of yours"}
        assert "custom_kernel" not in other.text
    listed = requests.get(f"{server.url}/submissions", headers=bearer(tokens["bob"]), timeout=10).json()
    assert listed == []


def test_an_unknown_leaderboard_is_404(service):
    server, tokens = service
    answer = requests.get(f"{server.url}/leaderboards/nvfp4_conv", headers=bearer(tokens["ada"]), timeout=10)
    assert answer.status_code == 404 and "unknown problem 'nvfp4_conv'" in answer.json()["error"]
    assert requests.get(f"{server.url}/leaderboards/nvfp4_gemv", timeout=10).status_code == 401
    missing = requests.get(f"{server.url}/nowhere", timeout=10)
    assert missing.status_code == 404 and missing.json() == {"error": "GET /nowhere: Not Found"}


@pytest.mark.skipif(CHROMIUM is None and not IN_CI, reason="no chromium here (CI installs it)")
def test_the_served_pages_in_headless_chromium(service, ranked, tmp_path):
    server, _ = service
    assert ranked[0].returncode == 0
    png = tmp_path / "index.png"
    chromium(tmp_path, f"--screenshot={png}", "--window-size=1200,900", server.url + "/")
    width, height, rows = png_pixels(png.read_bytes())
    assert (width, height) == (1200, 900)
    colours = {row[i: i + 3] for row in rows[::2] for i in range(0, len(row), 6)}
    assert len(colours) > 50, f"only {len(colours)} colours: the page looks blank"
    assert bytes.fromhex("eff6ff") in colours, "no table header colour: the problems table is not drawn"
    dom = chromium(tmp_path, "--dump-dom", server.url + "/").stdout
    assert 'href="nvfp4_dual_gemm/index.html"' in dom
    assert "2000-01-01 00:00 UTC" in dom  # nvfp4_gemm's deadline
    page = chromium(tmp_path, "--dump-dom", server.url + "/nvfp4_dual_gemm/index.html").stdout
    assert "nvfp4_dual_gemm leaderboard" in page and "ada" in page and "not rankable (cpu)" in page


def test_the_front_page_gives_its_own_address_and_says_where_runs_happen(service):
    server, _ = service
    page = html.unescape(requests.get(server.url + "/", timeout=10).text)
    assert f"export NVFP4_SERVER={server.url} " in page and "this page's address" not in page
    assert "on the service's CPU" in page and "organizer's GPU" not in page  # this service runs with --device cpu
