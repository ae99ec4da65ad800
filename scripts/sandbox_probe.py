"""Which of the worker's protections (harness/worker/sandbox.py) this machine allows with CUDA still working.

Each protection alone, then all together, in a fresh child process that afterwards initializes
CUDA and runs one kernel. Prints one line per variant and writes them as JSON. With ``pidns`` the
child is started the way the evaluator starts a worker, through harness.judge.worker_link.worker_reaper: it
runs as pid 2 of a new PID namespace under the reaper's init (the uid step is then applied there).

Each child also opens, through the driver (cuIpcOpenMemHandle), a CUDA IPC handle of a buffer this
process filled, and reads it back ("ipc ok" or "ipc FAIL"): the first question of the design that
would close the p02 hole (docs/security.md: the parent stages each call's inputs in a buffer it
shares with the worker's core), asked of a worker with every protection on.

Usage: python scripts/sandbox_probe.py OUT.json   (last line: NVFP4_SANDBOX=<steps that work here>)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from harness.judge.worker_link import worker_confinement, worker_spawn

CHILD = """
import ctypes, os, sys
sys.path.insert(0, {repo!r})
from harness.worker import landlock, sandbox
steps = sys.argv[1].split(",")
libc = ctypes.CDLL(None, use_errno=True)
if "no_new_privs" in steps: libc.prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
if "not_dumpable" in steps: libc.prctl(sandbox.PR_SET_DUMPABLE, 0, 0, 0, 0)
if "landlock" in steps: print(*landlock.first_layer([os.getcwd()]))  # before torch, as the worker does
import torch
x = torch.ones(4, device="cuda")
print("cuda ok", float((x * 2).sum()), "uid", os.getuid(), "net isolated", sandbox._network_isolated(),
      "pid", os.getpid(), "processes:", os.environ.get("NVFP4_PROCESS_GUARD", "-"))
handle, offset, size = bytes.fromhex(os.environ["PROBE_IPC_HANDLE"]), *map(int, os.environ["PROBE_IPC_AT"].split(","))
cuda = ctypes.CDLL("libcuda.so.1")
class Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_char * 64)]
base, copy = ctypes.c_uint64(), (ctypes.c_uint8 * size)()
status = cuda.cuIpcOpenMemHandle_v2(ctypes.byref(base), Handle(handle), 1)
if status == 0:
    status = cuda.cuMemcpyDtoH_v2(copy, ctypes.c_uint64(base.value + offset), ctypes.c_size_t(size))
print("ipc ok" if status == 0 and bytes(copy) == bytes(range(size)) else f"ipc FAIL (CUresult {{status}})")
"""
STEPS = worker_confinement.STEPS


def shared_buffer() -> tuple[torch.Tensor, dict[str, str]]:
    """A CUDA buffer holding bytes 0..255 and the environment that tells a child its IPC handle."""
    buffer = torch.arange(256, dtype=torch.uint8, device="cuda")
    shared = buffer.untyped_storage()._share_cuda_()  # (device, handle, size, offset, ...)
    return buffer, {"PROBE_IPC_HANDLE": shared[1].hex(), "PROBE_IPC_AT": f"{shared[3]},{buffer.numel()}"}


def run(steps: tuple[str, ...], workdir: str, ipc_env: dict[str, str] | None = None) -> dict:
    uid = worker_confinement.UNPRIVILEGED_UID if "uid" in steps and os.geteuid() == 0 else None

    reaped = "pidns" in steps  # through the evaluator's reaper: CUDA as pid 2 of a new PID namespace

    def child() -> None:
        if "netns" in steps:
            worker_confinement.private_network()
        if uid is not None and not reaped:
            worker_confinement.drop_privileges(uid)

    env = {**os.environ, "HOME": workdir, "TMPDIR": workdir, **(ipc_env or {}),
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    command = [sys.executable, "-c", CHILD.format(repo=str(Path(__file__).resolve().parent.parent)), ",".join(steps)]
    if reaped:
        command = [sys.executable, "-c", worker_spawn._REAPER_ENTRY, "-" if uid is None else str(uid), "pidns", "",
                   "-", *command]  # no descriptors to pass on, no syscall supervisor
    try:
        done = subprocess.run(command, cwd=workdir, env=env, preexec_fn=child, capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        return {"steps": list(steps), "exit": None, "ok": False, "tail": [f"{type(error).__name__}: {error}"]}
    text = (done.stdout + done.stderr).strip().splitlines()
    return {"steps": list(steps), "exit": done.returncode, "ok": "cuda ok" in done.stdout,
            "ipc": "ipc ok" in done.stdout, "tail": text[-3:]}


def main(out_path: str) -> int:
    results = []
    buffer, ipc_env = shared_buffer()  # kept alive while the children open it
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        for steps in [(), *((s,) for s in STEPS), STEPS]:
            result = run(steps, workdir, ipc_env=ipc_env)
            results.append(result)
            print(f"{','.join(steps) or 'none':55s} {'OK' if result['ok'] else 'FAIL'}  "
                  f"ipc {'OK' if result.get('ipc') else 'FAIL'}  {result['tail'][-1:]}", flush=True)
    Path(out_path).write_text(json.dumps(results, indent=2))
    usable = STEPS if results[-1]["ok"] else [r["steps"][0] for r in results[1:-1] if r["ok"]]
    print(f"{worker_confinement.STEPS_ENV}={','.join(usable)}")
    del buffer
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
