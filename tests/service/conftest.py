"""A real service for the tests: ``python -m harness serve`` in a subprocess on a loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.user_paths import without_user_settings

REPO = Path(__file__).resolve().parents[2]
SECRET_SEED = 918273645546372819
GEMV = REPO / "submissions" / "nvfp4_gemv" / "torch_reference.py"  # the fastest CPU check (test mode)
DUAL = REPO / "submissions" / "nvfp4_dual_gemm" / "torch_reference.py"  # the fastest full ranked run on the CPU


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def harness(*args: str, timeout: float = 120, **options) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` from the repository root, as a user types it."""
    env = without_user_settings()
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env, **options)


def add_user(db: Path, name: str) -> str:
    out = harness("user", "add", name, "--db", str(db))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1].split()[-1]


class Server:
    """One ``harness serve`` process (own session, so a kill takes its evaluation workers too)."""

    def __init__(self, db: Path, log: Path, *options: str) -> None:
        self.db, self.log, self.options = db, log, options
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> Server:
        env = without_user_settings()
        env["NVFP4_SECRET_SEED"] = str(SECRET_SEED)
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "harness", "serve", "--port", str(self.port), "--db", str(self.db),
                 "--device", "cpu", "--same-user-workers", *self.options],  # CI: root cannot drop to 65534
                cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the server exited: {self.log.read_text()[-2000:]}"
            try:
                if requests.get(self.url + "/", timeout=2).status_code == 200:
                    return self
            except requests.ConnectionError:
                time.sleep(0.2)
        raise AssertionError(f"the server did not answer in 60 s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL, as a crash or a power cut would: no shutdown code runs."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def wait_done(server: Server, token: str, job_id: int, timeout_s: float = 120) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = requests.get(f"{server.url}/submissions/{job_id}", headers=bearer(token), timeout=10).json()
        if job["status"] == "done":
            return job
        time.sleep(0.2)
    raise AssertionError(f"submission {job_id} not done after {timeout_s} s: {job}")


@pytest.fixture(scope="module")
def service_factory(tmp_path_factory):
    """Start servers on fresh databases; every one is stopped at the end of the module."""
    started: list[Server] = []

    def start(*options: str, db: Path | None = None) -> Server:
        folder = tmp_path_factory.mktemp("service")
        server = Server(db or folder / "service.db", folder / "server.log", *options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
