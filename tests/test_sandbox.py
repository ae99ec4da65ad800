"""The worker's sandbox steps, each where this kernel allows it (Landlock checked in a child)."""

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from harness.judge.run import evaluate_submission
from harness.judge.verdict.modes import MODES
from harness.judge.worker_link import worker_confinement, worker_spawn

REPO = Path(__file__).resolve().parent.parent
ORPHAN = REPO / "tests" / "adversarial" / "submissions" / "o01_setsid_orphan.py"

CHILD = textwrap.dedent("""
    import os, sys
    from harness.worker import landlock
    inside, outside = sys.argv[1], sys.argv[2]
    print(landlock.first_layer([inside])[0])
    os.makedirs(os.path.join(inside, "tmp"))
    os.makedirs(os.path.join(inside, "cache"))
    with open(os.path.join(inside, "tmp", "build.so"), "w") as handle:
        handle.write("x")
    # What Triton's cache does: a finished build renamed from a temporary folder into place.
    os.replace(os.path.join(inside, "tmp", "build.so"), os.path.join(inside, "cache", "build.so"))
    print("rename ok")
    try:
        open(os.path.join(outside, "escape"), "w").close()
        print("outside writable")
    except PermissionError:
        print("outside refused")
""")


def test_landlock_allows_renames_in_the_workdir_and_refuses_writes_elsewhere(tmp_path):
    inside, outside = tmp_path / "work", tmp_path / "other"
    inside.mkdir()
    outside.mkdir()
    run = subprocess.run([sys.executable, "-c", CHILD, str(inside), str(outside)], capture_output=True, text=True,
                         timeout=60)
    status, *rest = run.stdout.splitlines() or [""]
    if status.startswith("off"):
        pytest.skip(f"Landlock is not available on this kernel: {status}")
    assert run.returncode == 0, run.stderr
    assert status.startswith("on: writes only in") and rest == ["rename ok", "outside refused"]


MEMORY_FILES = textwrap.dedent("""
    import os, sys
    from harness.worker import landlock
    parent, R, RW = sys.argv[1], os.O_RDONLY, os.O_RDWR
    print(" ".join(landlock.first_layer([os.getcwd()])))
    for path, flags in [("/proc/self/mem", R), ("/proc/self/mem", RW), ("/proc/self/pagemap", R),
                        (f"/proc/self/task/{os.getpid()}/mem", R), ("/proc/thread-self/mem", RW),
                        (f"/proc/{parent}/environ", R), (f"/proc/{parent}/mem", R),
                        ("/proc/self/root/proc/self/mem", R),
                        ("/proc/self/maps", R), ("/proc/self/status", R), ("/proc/cpuinfo", R),
                        ("/proc/self/comm", RW), ("/dev/null", RW), (sys.executable, R),
                        (f"/proc/self/task/{os.getpid()}/mem", os.O_WRONLY)]:
        try:
            os.close(os.open(path, flags))
            print(path, flags, "open")
        except OSError as error:
            print(path, flags, error.strerror)
    import ctypes
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    named = libc.fopen(f"/proc/self/task/{os.getpid()}/comm".encode(), b"w")  # as CUDA names its threads
    print("thread name", "written" if named else "refused")
""")


@pytest.mark.parametrize("preload", [True, False], ids=["with the preload", "without it"])
def test_landlock_refuses_every_processs_memory_files_and_keeps_the_rest(tmp_path, preload):
    """The kernel's check, on the file an open reaches, not the supervisor's reading of a path:
    /proc/<pid>/mem however named (self, thread-self, task/<tid>, root/), another process's
    folder, the page map; the worker's own maps and status, CPU facts and /dev/null
    stay open. With the preload a thread's name written as CUDA writes it lands in /dev/null and
    task/ is closed whole; without it task/ stays writable, a thread's mem with it (write only)."""
    library = worker_spawn.thread_name_preload()
    if preload and library is None:
        pytest.skip("the worker's preload is not built here (python setup.py build_ext --inplace)")
    env = {**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": str(library) if preload else ""}
    run = subprocess.run([sys.executable, "-c", MEMORY_FILES, str(os.getpid())], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, env=env)
    status, *lines, named = run.stdout.splitlines() or [""]
    if status.startswith("off"):
        pytest.skip(f"Landlock is not available on this kernel: {status}")
    assert run.returncode == 0, run.stderr
    assert "no process's mem" in status and ("mem is writable" in status) != preload
    outcome = {" ".join(line.split()[:2]): line.split(maxsplit=2)[2] for line in lines}
    refused = [key for key, seen in outcome.items() if seen != "open"]
    opened = [key.split()[0] for key, seen in outcome.items() if seen == "open"]
    assert len(refused) == (9 if preload else 8) and all(
        outcome[key] in ("Permission denied", "No such file or directory") for key in refused), outcome
    assert opened[:6] == ["/proc/self/maps", "/proc/self/status", "/proc/cpuinfo", "/proc/self/comm", "/dev/null",
                          sys.executable]
    assert [path.endswith("/mem") for path in opened[6:]] == ([] if preload else [True])  # O_WRONLY, in task/
    assert named == "thread name written"


def test_steps_come_from_the_environment(monkeypatch):
    monkeypatch.delenv(worker_confinement.STEPS_ENV, raising=False)
    assert worker_confinement.chosen_steps() == worker_confinement.DEFAULT_STEPS
    assert frozenset(worker_confinement.STEPS) - {"pidns"} == worker_confinement.DEFAULT_STEPS
    monkeypatch.setenv(worker_confinement.STEPS_ENV, "netns, uid,bogus")
    assert worker_confinement.chosen_steps() == frozenset({"netns", "uid"})


def test_a_worker_dies_with_its_evaluator(tmp_path):
    """A killed evaluator (a Dask worker killed mid-job) takes its submission's worker with it."""
    repo = Path(__file__).resolve().parent.parent
    pid_file = tmp_path / "worker.pid"
    submission = tmp_path / "sleeper.py"
    submission.write_text(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n")
    evaluator = subprocess.Popen([sys.executable, "-m", "harness", "eval", "nvfp4_gemv", str(submission),
                                  "--device", "cpu", "--mode", "test"], cwd=repo,
                                 # writes its pid outside
                                 env={**os.environ, worker_confinement.STEPS_ENV: "not_dumpable"},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and evaluator.poll() is None, "the worker never started"
        time.sleep(0.2)
    evaluator.kill()
    evaluator.wait()
    worker = int(pid_file.read_text())
    deadline = time.monotonic() + 20
    while _alive(worker):
        assert time.monotonic() < deadline, "the worker outlived its evaluator"
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _tagged(tag: str) -> list[int]:
    """Processes whose command line carries ``tag``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and tag.encode() in (entry / "cmdline").read_bytes() and _alive(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reaper is Linux-only")
@pytest.mark.parametrize("pidns", [True, False], ids=["pid-namespace", "subreaper-only"])
def test_nothing_the_submission_starts_outlives_its_run(monkeypatch, pidns):
    """A double-forked, setsid'ed sleeper deaf to SIGTERM is running through the run (its
    custom_kernel checks) and gone when evaluate_submission returns: the reaper kills it, or the
    worker's PID namespace ends with the run. Without the pidns step, the subreaper alone."""
    tag = f"nvfp4-orphan-{uuid.uuid4().hex}"
    monkeypatch.setenv("ORPHAN_TAG", tag)
    steps = [s for s in worker_confinement.STEPS if pidns or s != "pidns"]
    monkeypatch.setenv(worker_confinement.STEPS_ENV, ",".join(steps))
    notes: list[str] = []
    result = evaluate_submission("nvfp4_gemv", ORPHAN, MODES["test"], "cpu", progress=notes.append)
    assert result.status.value == "passed", result.reason
    sandbox = next(note for note in notes if note.startswith("sandbox:"))
    if pidns and "own PID namespace" not in sandbox:
        pytest.skip(f"no PID namespace here (needs CAP_SYS_ADMIN): {sandbox}")
    assert ("own PID namespace" if pidns else "a subreaper ends them") in sandbox
    assert _tagged(tag) == [], "a process the submission started outlived its run"
