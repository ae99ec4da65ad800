"""What CUDA needs of /proc under the worker's Landlock rules (harness/worker/landlock.py).

Each variant runs in a fresh child: the first layer's rules plus one extra grant, then CUDA's
init and one kernel ("preload": the first layer with the worker's preload, as a worker runs).
With the shim (scripts/open_log_shim.c, built here with gcc) every /proc and /dev open through
libc is logged: its path, flags and result, for the first-layer variant and for a child without
Landlock (what CUDA opens there at all).

Usage: python scripts/landlock_cuda_probe.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.judge.worker_link import worker_spawn  # noqa: E402

CHILD = """
import os, sys
sys.path.insert(0, {repo!r})
from harness.contract import proc_mounts
from harness.worker import landlock
extra = sys.argv[1]
if extra != "none":
    roots = proc_mounts.proc_roots(open("/proc/self/mountinfo").read())
    rules = landlock.first_layer_rules([os.getcwd()], os.getpid(), roots)
    pid = os.getpid()
    name = extra.split("_")[0]
    grants = [] if name in ("first", "preload") else [f"/proc/{{pid}}/{{name}}"]
    access = {{"read": landlock.READ_FILE, "write": landlock.WRITES}}.get(extra.split("_")[-1],
                                                                    landlock.READ_FILE | landlock.WRITES)
    rules += [(path, access) for path in grants]
    print("landlock", landlock.restrict(rules, landlock.READ_FILE | landlock.WRITES | landlock.REFER, pin=("/proc",)))
import torch
x = torch.ones(4, device="cuda")
print("cuda ok", float((x * 2).sum()))
"""
VARIANTS = ("none", "first", "preload", "task_read", "task_write")
"""none: no Landlock; first: the first layer; preload: the first layer with the worker's preload
(harness/worker/csrc/preload.c), as the worker runs; task_*: the first layer plus task/ read or write."""


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shim = out / "open_log_shim.so"
    source = REPO / "scripts" / "open_log_shim.c"
    built = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(shim), str(source), "-ldl", "-lpthread"],
                           capture_output=True, text=True)
    results = []
    with tempfile.TemporaryDirectory() as workdir:
        for extra in VARIANTS:
            log = out / f"opens_{extra}.txt"
            env = {**os.environ, "OPEN_LOG": str(log)}
            if built.returncode == 0 and extra in ("none", "first", "task_read", "task_write"):
                env["LD_PRELOAD"] = str(shim)
            if extra == "preload":
                env["LD_PRELOAD"] = str(worker_spawn.thread_name_preload())
            done = subprocess.run([sys.executable, "-c", CHILD.format(repo=str(REPO)), extra], cwd=workdir, env=env,
                                  capture_output=True, text=True, timeout=120)
            ok = "cuda ok" in done.stdout
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
            results.append({"grant": extra, "ok": ok, "tail": tail})
            print(f"{extra:10s} {'OK' if ok else 'FAIL'} {tail}", flush=True)
            if log.exists():
                lines = log.read_text().splitlines()
                refused = [line for line in lines if "errno=13" in line or "errno=1 " in line
                           or "/task" in line or "setname" in line or "thread-self" in line]
                print(f"  {len(lines)} /proc or /dev opens logged, {len(refused)} refused or naming a thread:",
                      flush=True)
                for line in sorted(set(refused))[:20]:
                    print("   ", line, flush=True)
                if extra == "none":
                    for line in sorted({" ".join(l.split()[2:4]) for l in lines if "/proc" in l})[:60]:
                        print("    seen:", line, flush=True)
    if built.returncode:
        print("shim not built:", built.stderr[-300:])
    (out / "landlock_cuda.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
