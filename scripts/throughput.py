"""How fast a ranked evaluation is: every shipped Triton baseline in leaderboard mode (GPU only).

Per file: the wall time of the whole `harness eval --mode leaderboard` process (worker start,
import and JIT included; its output, each line stamped with the seconds since the start, in
OUT_DIR/<file>.log), and per benchmark shape the timed calls and the harness's own time per
timed call (`overhead_ms`: everything but the call's measured time). Goals (issue 14): under 10 s
per file with at least 100 timed calls per shape, under 10 ms of harness time per call. Every file
starts with empty compile caches (a fresh NVFP4_COMPILE_CACHE root per file): its first ranked run,
as on a fresh machine, whatever ran here before (scripts/coldstart.py measures the warm second run).

Issue 33's per-call targets (harness ms per timed call at most 5 on every NVFP4 benchmark shape, at
most 20 on an output of 100 MB or more) are printed per file as a `targets` line, each shape's
figure beside its target and whether it met it.

The vendor library's first measurement on this GPU (cuBLAS's times for the report's "% of vendor",
6-10 s on the H100) is once per machine, not per file: it is made first, for every problem of the
files that declares a vendor (VENDOR_UP_FRONT=0 leaves it to the first file of each problem, as a
contestant's first `eval` on a fresh machine pays it), and booked on its own (``vendor_up_front_s``
in throughput.json), never hidden in a file's wall.

    python3 scripts/throughput.py OUT_DIR [FILE ...]   (default: every submissions/*/triton_*.py)
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

EVAL_LIMIT_S = 600
"""One ranked eval may take this long before it is killed (a hung file must not hang the device call)."""
NVFP4_TARGET_MS = 5.0
LARGE_OUTPUT_TARGET_MS = 20.0
LARGE_OUTPUT_BYTES = 100e6
"""Issue 33: harness ms per timed call on every NVFP4 benchmark shape, and on an output this large."""


def empty_compile_caches() -> dict[str, str]:
    """The environment with a fresh compile-cache root, searchable by the workers' uid 65534."""
    folder = tempfile.mkdtemp(prefix="nvfp4-throughput-")
    os.chmod(folder, 0o711)
    return {**os.environ, "NVFP4_COMPILE_CACHE": os.path.join(folder, "compile")}


VENDOR_MEASURE = """
import json, sys, time, torch
from harness.commands.calibrate_command import measure_vendor
from harness.contract.task_spec import load_task
seconds = {}
for problem in sys.argv[1:]:
    task, started = load_task(problem), time.perf_counter()
    if task.vendor is not None:
        measure_vendor(task, torch.cuda.get_device_name(0))
        seconds[problem] = round(time.perf_counter() - started, 2)
print(json.dumps(seconds))
"""
"""Each problem's vendor times measured and cached on this GPU, as `harness eval` does on first use."""


def vendor_up_front(files: list[Path], out: Path) -> dict[str, float]:
    """Seconds of each problem's vendor measurement, made once before the files (same compile-cache
    treatment as a file: a fresh root); {} when VENDOR_UP_FRONT=0 or it failed (its log says why)."""
    if os.environ.get("VENDOR_UP_FRONT", "1") == "0":
        return {}
    problems = sorted({path.parent.name for path in files})
    with (out / "vendor_up_front.log").open("w") as log:
        done = subprocess.run([sys.executable, "-c", VENDOR_MEASURE, *problems], stdout=subprocess.PIPE,
                              stderr=log, text=True, env=empty_compile_caches(), timeout=EVAL_LIMIT_S)
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]) if done.returncode == 0 and lines else {}


def timeline(log: Path, started: float, command: list[str]) -> int:
    """Run the command; every line it prints goes to ``log`` stamped with seconds since ``started``.
    Killed after EVAL_LIMIT_S (exit code -9)."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=empty_compile_caches()) as run, \
            log.open("w") as handle:
        watchdog = threading.Timer(EVAL_LIMIT_S, run.kill)
        watchdog.start()
        try:
            for line in run.stdout:
                handle.write(f"{time.perf_counter() - started:7.2f} {line}")
        finally:
            watchdog.cancel()
    return run.returncode


def target_ms(problem: str, case: dict) -> float | None:
    """Issue 33's harness ms per timed call for one benchmark shape (None: no target)."""
    if problem.startswith("nvfp4_"):
        return NVFP4_TARGET_MS
    if isinstance(case.get("m"), int) and 2 * case["m"] * case.get("n", 1) >= LARGE_OUTPUT_BYTES:  # fp16/bf16
        return LARGE_OUTPUT_TARGET_MS
    return None


def targets(problem: str, timed: list[dict]) -> list[dict]:
    """Each benchmark shape's harness ms per timed call beside its target, where it has one."""
    rows = []
    for case in timed:
        target = target_ms(problem, case["case"])
        if target is not None and case.get("overhead_ms") is not None:
            ms = case["overhead_ms"]
            rows.append({"shape": {k: v for k, v in case["case"].items() if k != "seed"}, "ms": round(ms, 2),
                         "target_ms": target, "met": ms <= target})
    return rows


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    secret = out / "secret"
    secret.touch(mode=0o600)  # harness.seeds refuses a secret file others may read
    secret.write_text(str(secrets.randbits(62)))
    rows = []
    files = [Path(f) for f in sys.argv[2:]] or sorted(Path("submissions").glob("*/triton_*.py"))
    vendor_s = vendor_up_front(files, out)
    print(json.dumps({"vendor_up_front_s": vendor_s}), flush=True)
    for path in files:
        record_path = out / f"{path.parent.name}__{path.stem}.json"
        started = time.perf_counter()
        exit_code = timeline(out / f"{path.parent.name}__{path.stem}.log", started,
                             [sys.executable, "-m", "harness", "eval", str(path), "--mode", "leaderboard",
                              "--secret-seed-file", str(secret), "--json", str(record_path)])
        wall_s = time.perf_counter() - started
        record = json.loads(record_path.read_text()) if record_path.is_file() else {"cases": []}
        timed = [c for c in record["cases"] if c["kind"] == "benchmark" and c.get("timing")]
        row = {"file": f"{path.parent.name}/{path.name}", "exit_code": exit_code, "wall_s": round(wall_s, 1),
               "rankable": record.get("rankable"), "runs": [c["timing"]["runs"] for c in timed],
               "overhead_ms": [round(c["overhead_ms"], 2) for c in timed if c.get("overhead_ms") is not None],
               "overhead_split_ms": [c.get("overhead_split_ms") for c in timed],
               "worker_split_ms": [c.get("worker_split_ms") for c in timed], "wall_phases_s": record.get("wall_s"),
               "exposed_calls": [c.get("exposed_calls") for c in timed],
               "queued_sleep_us": [round(c.get("queued_sleep_us") or 0) for c in timed],
               "median_us": [round(c["timing"]["median_us"], 2) for c in timed]}
        rows.append(row)
        print(json.dumps(row), flush=True)
        row["targets"] = targets(path.parent.name, timed)
        print("targets " + json.dumps(row["targets"]), flush=True)
    secret.unlink()
    (out / "throughput.json").write_text(json.dumps({"vendor_up_front_s": vendor_s, "files": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
