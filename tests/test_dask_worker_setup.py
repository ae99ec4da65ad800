"""Dask workers set up as they join (issue 35): the environment Dask set undone, a blank worker waiting,
and --cluster local started ahead of the parent's imports."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from harness.execution import dask_executor, local_cluster
from harness.execution.dask_worker_setup import dask_set_variables
from harness.judge.worker_link import host_share

DASK = {"OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1, "MALLOC_TRIM_THRESHOLD_": 65536}


def test_only_what_dask_set_is_undone():
    environ = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "4",
               "MALLOC_TRIM_THRESHOLD_": "65536", "PYTHONHASHSEED": "6640"}
    assert dask_set_variables(environ, {}, DASK) == ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_"]
    # the organizer set OMP_NUM_THREADS=1 for the Nanny itself: theirs, kept
    assert dask_set_variables(environ, {"OMP_NUM_THREADS": "1"}, DASK) == ["MKL_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_"]
    assert dask_set_variables(environ, None, DASK) == []  # no Nanny's environment to tell by: kept
    assert dask_set_variables(environ, {}, {}) == []  # a Dask configured to set none


def _fake_gpus(root: Path, models: list[str]) -> Path:
    for index, model in enumerate(models):
        (root / f"0000:0{index}:00.0").mkdir(parents=True)
        (root / f"0000:0{index}:00.0" / "information").write_text(f"Model: \t\t {model}\nIRQ:   1\n")
    return root


def test_gpus_are_counted_without_torch_only_where_that_is_sure(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    two = _fake_gpus(tmp_path / "two", ["NVIDIA H100 80GB HBM3"] * 2)
    slots = local_cluster.guessed_slots("cuda", two)
    assert {name: env["CUDA_VISIBLE_DEVICES"] for name, env in slots.items()} == {"gpu0": "0", "gpu1": "1"}
    assert slots["gpu0"][host_share.SHARE_ENV] == "2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert {n: e["CUDA_VISIBLE_DEVICES"] for n, e in local_cluster.guessed_slots("cuda", two).items()} == {"gpu0": "1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5f1c")  # by UUID: torch must tell
    assert local_cluster.guessed_slots("cuda", two) is None
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert local_cluster.guessed_slots("cuda", _fake_gpus(tmp_path / "mixed", ["NVIDIA H100", "NVIDIA L4"])) is None
    assert local_cluster.guessed_slots("cuda", tmp_path / "none") is None
    assert local_cluster.guessed_slots(None, tmp_path / "none") == local_cluster._cpu_slots()  # no driver: CPU


def _on_worker():
    import os

    from harness.judge.worker_link import blank_workers, host_share

    return (os.environ.get("OMP_NUM_THREADS"), os.environ.get("MALLOC_TRIM_THRESHOLD_"),
            host_share.thread_env(os.environ)["OMP_NUM_THREADS"],
            [blank.process.poll() for blank in blank_workers.SHELF.waiting()], blank_workers.SHELF.ahead)


def test_local_cluster_started_ahead_is_taken_with_the_hosts_share(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    local_cluster.start_ahead_for_command(["leaderboard", "--cluster", "local", "--device", "cpu"])
    ahead = local_cluster._ahead
    assert ahead is not None
    ahead.thread.join()
    cluster = ahead.started[0]
    executor = dask_executor.open_executor("local", device="cpu")
    try:
        assert executor._cluster is cluster and local_cluster._ahead is None  # the one started ahead
        found = executor.client.run(_on_worker)
        parent_omp = os.environ.get("OMP_NUM_THREADS")
    finally:
        executor.close()
    # each worker: neither Dask's thread limit (its Nanny set 1, in this process too) nor its trim
    # threshold, the host's share, a live blank worker and one kept ahead after each job
    share = str(max(1, host_share.host_cpus() // len(found)))
    assert parent_omp is None
    assert sorted(found.values()) == [(None, None, share, [None], True)] * len(found)


def test_a_cluster_started_ahead_for_other_workers_is_stopped(monkeypatch):
    started, stopped = [], []
    monkeypatch.setattr(local_cluster, "_start", lambda slots, device: started.append(slots) or ("c", "k", 1.0))
    monkeypatch.setattr(local_cluster, "stop_local_cluster", lambda cluster, client: stopped.append(cluster))
    guessed = {"gpu0": {"CUDA_VISIBLE_DEVICES": "0"}, "gpu1": {"CUDA_VISIBLE_DEVICES": "1"}}
    assert local_cluster._Ahead(guessed, "cuda").take(dict(guessed)) == ("c", "k", 1.0) and not stopped
    assert local_cluster._Ahead(guessed, "cuda").take({"gpu0": {"CUDA_VISIBLE_DEVICES": "0"}}) is None
    assert stopped == ["c"]  # torch found one GPU of that model: the guess was wrong, its cluster stopped
    ahead = local_cluster._Ahead(guessed, "cuda")
    ahead.discard()  # the command failed before it opened its executor
    assert stopped == ["c", "c"] and ahead.take(guessed) is None


def test_only_cluster_local_starts_ahead():
    for argv in (["leaderboard", "--cluster", "tcp://h:1"], ["leaderboard"], ["eval", "--cluster", "local"],
                 ["serve", "--cluster", "local", "--help"]):
        local_cluster.start_ahead_for_command(argv)
        assert local_cluster._ahead is None, argv


def _named_on_worker(dask_worker):
    """The worker's name, its blank worker's age (s) and ``_on_worker``'s findings."""
    import time

    from harness.judge.worker_link import blank_workers

    return dask_worker.name, time.perf_counter() - blank_workers.SHELF.waiting()[0].started_at, _on_worker()


def test_workers_started_by_hand_are_set_up_by_the_client_or_as_they_start(tmp_path):
    """`dask worker` (its own Nanny): the client's plugin undoes the Nanny's environment and starts a
    blank worker; with `--preload harness.execution.dask_worker_setup` that is done before any client."""
    port = 18700 + os.getpid() % 500
    here = Path(__file__).resolve().parent  # the worker imports this module for _named_on_worker
    env = {**os.environ, host_share.SHARE_ENV: "1", "PYTHONPATH": f"{here.parent}{os.pathsep}{here}"}
    env.pop("OMP_NUM_THREADS", None)
    address = f"tcp://127.0.0.1:{port}"
    worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--resources", "GPU=1",
              "--no-dashboard", "--name"]
    processes = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                   "--port", str(port), "--no-dashboard"], env=env, stderr=subprocess.DEVNULL),
                 subprocess.Popen([*worker, "by-hand"], env=env, stderr=subprocess.DEVNULL),
                 subprocess.Popen([*worker, "preloaded", "--preload", "harness.execution.dask_worker_setup"],
                                  env=env, stderr=subprocess.DEVNULL)]
    try:
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(address, timeout=5) as waiting:
                    waiting.wait_for_workers(2, timeout=120)
                break
            except OSError:  # the scheduler is not up yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        connected = time.monotonic()
        executor = dask_executor.open_executor(address, device="cpu")
        try:
            found = {name: (age, rest) for name, age, rest in executor.client.run(_named_on_worker).values()}
            since_connected = time.monotonic() - connected
        finally:
            executor.close()
    finally:
        for process in processes:
            process.kill()
            process.wait()
    # Dask's 1 and trim threshold are gone; the evaluations get the host's share (one evaluation: every core)
    assert {name: rest for name, (_, rest) in found.items()} == {
        name: (None, None, str(host_share.host_cpus()), [None], True) for name in ("by-hand", "preloaded")}
    assert found["by-hand"][0] < since_connected < found["preloaded"][0]  # its blank worker: at the client's setup


def test_a_result_crosses_to_the_client_without_torch(tmp_path):
    """A cluster's client unpickles every result on its event loop: a torch object in it (torch's
    version was one) made the client import torch there, holding every other job's lines and result."""
    from harness.execution.eval_job import EvalJob, run_job

    job = EvalJob(key="k", problem="nvfp4_gemm", filename="wrong.py", device="cpu", secret_seed=5,
                  source=b"def custom_kernel(data):\n    return None\n")
    result = run_job(job)
    assert result.device.get("torch")  # the version is there, as a plain string
    (tmp_path / "result.pickle").write_bytes(__import__("cloudpickle").dumps(result))
    loads = ("import pickle, sys; pickle.loads(open(sys.argv[1], 'rb').read()); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))")
    found = subprocess.run([sys.executable, "-c", loads, str(tmp_path / "result.pickle")], capture_output=True,
                           text=True, check=True, cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    assert found == "[]"
