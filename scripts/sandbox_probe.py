"""Which of the worker's protections (harness/sandbox.py) this machine allows with CUDA still working.

Each protection alone, then all together, in a fresh child process that afterwards initializes
CUDA and runs one kernel. Prints one line per variant and writes them as JSON.

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

from harness import sandbox

CHILD = """
import ctypes, os, sys
sys.path.insert(0, {repo!r})
from harness import sandbox
steps = sys.argv[1].split(",")
libc = ctypes.CDLL(None, use_errno=True)
if "no_new_privs" in steps: libc.prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
if "not_dumpable" in steps: libc.prctl(sandbox.PR_SET_DUMPABLE, 0, 0, 0, 0)
extra = [p for p in os.environ.get("PROBE_WRITABLE", "").split(",") if p]
if "landlock" in steps: print(sandbox._landlock([os.getcwd(), *sandbox.WRITABLE_SYSTEM_PATHS, *extra]))
import torch
x = torch.ones(4, device="cuda")
print("cuda ok", float((x * 2).sum()), "uid", os.getuid(), "net isolated", sandbox._network_isolated())
"""
STEPS = sandbox.STEPS


def run(steps: tuple[str, ...], workdir: str, writable: str = "") -> dict:
    uid = sandbox.UNPRIVILEGED_UID if "uid" in steps and os.geteuid() == 0 else None

    def child() -> None:
        if "netns" in steps:
            sandbox.private_network()
        if uid is not None:
            sandbox.drop_privileges(uid)

    env = {**os.environ, "HOME": workdir, "TMPDIR": workdir, "PROBE_WRITABLE": writable}
    try:
        done = subprocess.run([sys.executable, "-c", CHILD.format(repo=str(Path(__file__).resolve().parent.parent)),
                               ",".join(steps)], cwd=workdir, env=env, preexec_fn=child, capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        return {"steps": list(steps), "exit": None, "ok": False, "tail": [f"{type(error).__name__}: {error}"]}
    text = (done.stdout + done.stderr).strip().splitlines()
    return {"steps": list(steps), "writable": writable, "exit": done.returncode, "ok": "cuda ok" in done.stdout,
            "tail": text[-3:]}


def main(out_path: str) -> int:
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        for steps in [(), *((s,) for s in STEPS), STEPS]:
            result = run(steps, workdir)
            results.append(result)
            print(f"{','.join(steps) or 'none':55s} {'OK' if result['ok'] else 'FAIL'}  {result['tail'][-1:]}",
                  flush=True)
        for writable in ("/proc", "/proc,/sys", "/proc,/sys,/tmp,/run,/var,/dev/shm"):  # what Landlock must allow
            result = run(("landlock",), workdir, writable)
            print(f"landlock + writes in {writable:38s} {'OK' if result['ok'] else 'FAIL'}  {result['tail'][-1:]}",
                  flush=True)
    Path(out_path).write_text(json.dumps(results, indent=2))
    usable = STEPS if results[-1]["ok"] else [r["steps"][0] for r in results[1:-1] if r["ok"]]
    print(f"{sandbox.STEPS_ENV}={','.join(usable)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
