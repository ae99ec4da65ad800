"""An evaluation's thread pools take its share of the host's cores, not all of them (issue 35: two
evaluations on one two-GPU host each sized their pools for the whole host)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.commands.main import main
from harness.contract.results import ExitCode
from harness.execution.local_cluster import worker_slots
from harness.judge.worker_link import host_share
from harness.judge.worker_link.worker_spawn import worker_environment

REPO = Path(__file__).resolve().parents[1]


def test_the_share_is_the_setting_else_the_hosts_gpus_else_one(tmp_path):
    gpus = tmp_path / "gpus"
    assert host_share.evaluations_on_host({host_share.SHARE_ENV: "3"}, gpus) == 3
    assert host_share.evaluations_on_host({}, gpus) == 1  # no NVIDIA driver: a CPU host
    gpus.mkdir()
    for address in ("0000:18:00.0", "0000:2a:00.0"):
        (gpus / address).mkdir()
    assert host_share.evaluations_on_host({}, gpus) == 2  # whatever CUDA_VISIBLE_DEVICES hides


@pytest.mark.parametrize("raw", ["0", "-1", "two", "1.5"])
def test_a_bad_share_is_named_with_its_fix(raw):
    with pytest.raises(host_share.ShareError, match=f"NVFP4_HOST_SHARE='{raw}' is not a positive integer: set it"):
        host_share.evaluations_on_host({host_share.SHARE_ENV: raw})


def test_a_bad_share_is_one_line_from_the_command(monkeypatch, capsys):
    monkeypatch.setenv(host_share.SHARE_ENV, "none")
    with pytest.raises(SystemExit) as stop:
        main(["history"])
    assert stop.value.code == ExitCode.BAD_INPUT
    assert "NVFP4_HOST_SHARE='none' is not a positive integer" in capsys.readouterr().err


def test_each_evaluation_gets_its_share_of_the_cpus_and_at_least_one():
    assert host_share.cpu_share(cpus=32, sharing=2) == 16
    assert host_share.cpu_share(cpus=3, sharing=2) == 1
    assert host_share.cpu_share(cpus=2, sharing=8) == 1


def test_the_worker_starts_with_the_share_unless_the_organizer_set_its_threads(monkeypatch):
    monkeypatch.setenv(host_share.SHARE_ENV, "2")
    monkeypatch.setattr(host_share, "host_cpus", lambda: 32)
    for name in host_share.THREAD_ENV:
        monkeypatch.delenv(name, raising=False)
    env = worker_environment("cuda", "1")
    assert {name: env[name] for name in host_share.THREAD_ENV} == dict.fromkeys(host_share.THREAD_ENV, "16")
    assert host_share.SHARE_ENV not in env  # the scrubbed environment keeps no NVFP4_ variable
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert worker_environment("cuda", "1")["OMP_NUM_THREADS"] == "4"


def test_the_parents_torch_threads_take_the_share(monkeypatch):
    monkeypatch.setattr(host_share, "host_cpus", lambda: 4)
    monkeypatch.setenv(host_share.SHARE_ENV, "4")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    try:
        assert host_share.size_torch_threads() == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_the_compiled_core_hashes_on_the_threads_the_worker_was_given(monkeypatch):
    """The worker's environment reaches the core's digest, read at its import (a submission's later
    change of the variable changes nothing)."""
    pytest.importorskip("harness.worker._sealed", reason="the compiled core is not built in this checkout")
    monkeypatch.setattr(host_share, "host_cpus", lambda: 6)
    monkeypatch.setenv(host_share.SHARE_ENV, "2")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    probe = ("import os; import harness.worker._sealed as core; os.environ['OMP_NUM_THREADS'] = '1'; "
             "print(core.digest_threads())")
    for env, threads in ((worker_environment("cpu", None), "3"), ({**os.environ, "OMP_NUM_THREADS": "x"}, "8")):
        shown = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
                               capture_output=True, text=True, check=True)
        assert shown.stdout.strip() == threads


def test_a_local_clusters_workers_are_told_how_many_share_the_host():
    slots = worker_slots("cpu")
    assert {env[host_share.SHARE_ENV] for env in slots.values()} == {str(len(slots))}
