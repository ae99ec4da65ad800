"""The client of the submission service that ``harness submit`` uses: server, token, upload, follow.

It finds the server and token, uploads a file once and follows its job to the end.

Anything the service refuses (a bad token, a limit, a bad file) or an unreachable service is a
``ClientError`` of one line; a restart of the service while a job is followed is waited out.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml

SERVER_ENV, TOKEN_ENV, CONFIG_ENV = "NVFP4_SERVER", "NVFP4_TOKEN", "NVFP4_CONFIG"
DEFAULT_CONFIG = Path("~/.config/nvfp4-harness/client.yml")
REQUEST_TIMEOUT_S = 30.0
PROXY_DOWN = frozenset({502, 503, 504})  # a reverse proxy's answer while the service behind it restarts


class ClientError(Exception):
    """Why the submission could not go through; the one line the user sees."""


class Unreachable(ClientError):
    """No answer from the service (down, restarting, or a proxy says so): following retries it."""


@dataclass(frozen=True)
class Connection:
    server: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def read_config(path: Path | None = None) -> dict[str, str]:
    """server and token from the config file ($NVFP4_CONFIG, else ~/.config/nvfp4-harness/client.yml)."""
    path = (path or Path(os.environ.get(CONFIG_ENV, str(DEFAULT_CONFIG)))).expanduser()
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ClientError(f"{path}: unreadable config ({error}); it holds 'server: URL' and 'token: T'") from None
    if not isinstance(data, dict):
        raise ClientError(f"{path}: expected 'server: URL' and 'token: T' lines")
    return {key: str(data[key]) for key in ("server", "token") if data.get(key)}


def resolve_connection(server: str | None, token: str | None) -> Connection:
    """The flag, else the environment, else the config file."""
    config = read_config()
    server = server or os.environ.get(SERVER_ENV) or config.get("server")
    token = token or os.environ.get(TOKEN_ENV) or config.get("token")
    if not server:
        raise ClientError(f"no server: pass --server URL or set ${SERVER_ENV} (or 'server:' in {DEFAULT_CONFIG})")
    if not token:
        raise ClientError(f"no token: pass --token T or set ${TOKEN_ENV} (or 'token:' in {DEFAULT_CONFIG}); "
                          "the organizer gives one")
    return Connection(server.rstrip("/"), token)


def _answer(response: requests.Response) -> Any:
    """The JSON body of a 2xx answer; ClientError with the service's one line otherwise."""
    if response.ok:
        try:
            return response.json()
        except ValueError:
            kind = response.headers.get("content-type") or "no content type"
            raise ClientError(f"{response.url} answered {response.status_code} with something that is not JSON "
                              f"({kind}): is --server (or ${SERVER_ENV}) the submission service?") from None
    try:
        line = response.json().get("error") or response.text
    except (ValueError, AttributeError):
        text = response.text.strip()
        line = text.splitlines()[0] if text and not text.startswith("<") else response.reason  # a proxy's HTML page
    if response.status_code == 401:
        raise ClientError(f"the server refused the token: {line}")
    raise ClientError(f"the server refused the submission ({response.status_code}): {line}")


def _fields(answer: Any, *keys: str) -> dict[str, Any]:
    """The answer when it is a JSON object with these keys (another JSON API on --server is not)."""
    if not isinstance(answer, dict) or not all(key in answer for key in keys):
        raise ClientError(f"the server's answer lacks {', '.join(keys)}: is --server (or ${SERVER_ENV}) "
                          "the submission service?")
    return answer


def _unreachable(server: str, error: requests.RequestException) -> Unreachable:
    """One line for a request that got no answer, without urllib3's repr of its pool and socket."""
    if isinstance(error, requests.exceptions.SSLError):
        return Unreachable(f"TLS with {server} failed: check the URL's scheme and the server's certificate")
    if isinstance(error, requests.ConnectionError):
        return Unreachable(f"cannot reach {server}: is the service running? check --server or ${SERVER_ENV}")
    if isinstance(error, requests.Timeout):
        return Unreachable(f"{server} did not answer in {REQUEST_TIMEOUT_S:.0f} s")
    return Unreachable(f"cannot talk to {server}: {' '.join(str(error).split())}")


def _request(connection: Connection, method: str, path: str, **options: Any) -> requests.Response:
    """One request to the service; Unreachable (one line) when no answer came back."""
    try:
        return requests.request(method, f"{connection.server}{path}", headers=connection.headers,
                                timeout=REQUEST_TIMEOUT_S, **options)
    except requests.RequestException as error:
        raise _unreachable(connection.server, error) from None


def upload(connection: Connection, path: Path, mode: str, problem: str | None) -> dict[str, Any]:
    """POST the file once (never retried: a lost answer may still have queued it)."""
    fields = {"mode": mode, **({"problem": problem} if problem else {})}
    response = _request(connection, "POST", "/submissions", data=fields,
                        files={"file": (path.name, path.read_bytes(), "text/x-python")})
    return _fields(_answer(response), "id", "problem", "mode", "position")


def _status(connection: Connection, job_id: int) -> dict[str, Any]:
    """The job's state; a proxy's 502/503/504 means the service behind it is down: Unreachable."""
    response = _request(connection, "GET", f"/submissions/{job_id}")
    if response.status_code in PROXY_DOWN:
        raise Unreachable(f"{connection.server} answered {response.status_code} {response.reason}")
    return _fields(_answer(response), "status", "position", "attempts")


def _state_line(job: dict[str, Any]) -> str:
    if job["status"] == "queued":
        return f"queued, position {job['position']}"
    if job["status"] == "running":
        return f"running (attempt {job['attempts']})"
    return str(job["status"])


def follow(connection: Connection, job_id: int, *, poll_s: float = 1.0, unreachable_s: float = 120.0,
           say: Any = print) -> dict[str, Any]:
    """Poll until the job is done, saying each change of state; survives a restart of the service
    (no answer, or a proxy's 502/503/504, is retried for up to unreachable_s)."""
    last, lost_since = None, None
    while True:
        try:
            job = _status(connection, job_id)
            lost_since = None
        except Unreachable as error:
            lost_since = lost_since or time.monotonic()
            if time.monotonic() - lost_since > unreachable_s:
                raise ClientError(f"lost {connection.server} for {unreachable_s:.0f} s ({error}); "
                                  f"submission {job_id} stays queued there: check it later") from None
            if last != "unreachable":
                say(f"submission {job_id}: the server is unreachable, retrying")
                last = "unreachable"
            time.sleep(poll_s)
            continue
        state = _state_line(job)
        if state != last:
            say(f"submission {job_id}: {state}")
            last = state
        if job["status"] == "done":
            return _fields(job, "result")
        time.sleep(poll_s)
