"""Why one evaluation runs slower when another runs beside it on the same host: one measurement per hypothesis.

Issue 35 (docs/results.md run 13): on a two-GPU host each ranked evaluation took about 11% longer
when two ran at once. Each part below measures one hypothesis, with the same file evaluated
(`python -m harness eval --json`) alone on GPU 0 and then on GPU 0 and GPU 1 at once:

  alone        one evaluation, its pools sized for the whole host (NVFP4_HOST_SHARE=1)
  pair         two at once, each sized for the whole host (run 13's situation)
  pair_shared  two at once, each sized to its half (NVFP4_HOST_SHARE=2, what --cluster local sets)
  pair_pinned  two at once, sized to its half and pinned to its half of the CPUs (taskset)
  membw        host memory bandwidth (numpy copy of 1 GiB), one process alone against two at once
  pcie         pinned host-to-device and device-to-host copies, GPU 0 alone against GPU 0 and 1 at once

One evaluation alone runs first, unmeasured (the compile caches filled). For every evaluation:
its wall, its phases (RunResult.wall_s), the parent's per-call phases averaged over the benchmark
cases (overhead_split_ms: inputs_wait, exchange, seal, draw, check), and, sampled from /proc every
0.1 s, the CPU seconds and peak threads of the parent, the worker and every other process under
it, and the host's CPU busy fraction. CPU oversubscription shows as busy near 100% and a gap that
closes under pair_shared; a per-call phase that grows only in pairs names the step that
contends; bandwidth and PCIe show as a lower GB/s when two copy at once.

    python3 scripts/host_share_probe.py OUT --file submissions/nvfp4_gemm/triton_gemm.py \\
        --rounds 2    # -> OUT/host_share.json and OUT/host_share.md (printed too)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EVAL_PARTS = {"alone": (1, "1", False), "pair": (2, "1", False), "pair_shared": (2, "2", False),
              "pair_pinned": (2, "2", True)}
"""part -> (evaluations at once, NVFP4_HOST_SHARE, pinned to a CPU half)."""
PARTS = (*EVAL_PARTS, "membw", "pcie")
TICK_S = 0.1
CLOCK = os.sysconf("SC_CLK_TCK")

MEMBW = """import sys, time, numpy as np
a = np.ones(1 << 28, dtype=np.float32); b = np.empty_like(a); np.copyto(b, a)
while time.time() < float(sys.argv[1]): time.sleep(0.001)
t = time.perf_counter(); [np.copyto(b, a) for _ in range(8)]; s = time.perf_counter() - t
print(8 * 2 * a.nbytes / s / 1e9)"""
PCIE = """import sys, time, torch
h = torch.empty(1 << 29, dtype=torch.uint8, pin_memory=True); d = torch.empty(1 << 29, dtype=torch.uint8, device='cuda')
d.copy_(h); torch.cuda.synchronize()
while time.time() < float(sys.argv[1]): time.sleep(0.001)
out = []
for name, dst, src in (("h2d", d, h), ("d2h", h, d)):
    t = time.perf_counter(); [dst.copy_(src, non_blocking=True) for _ in range(8)]; torch.cuda.synchronize()
    out.append(f'"{name}": {8 * h.nbytes / (time.perf_counter() - t) / 1e9}')
print("{" + ", ".join(out) + "}")"""


def proc_table() -> dict[int, tuple[int, float, int, str]]:
    """pid -> (parent pid, CPU seconds, threads, role: worker, reaper or its command line) of every process now."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        role = "worker" if "worker.boot" in command else "reaper" if "worker_reaper" in command else command[:60]
        table[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK, int(fields[17]), role)
    return table


def host_busy() -> tuple[float, float]:
    """(busy ticks, all ticks) of the host since boot (/proc/stat's cpu line)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]
    return sum(ticks) - idle, sum(ticks)


def descendants(roots: set[int], table: dict[int, tuple[int, float, int, str]]) -> set[int]:
    found, grew = set(roots), True
    while grew:
        more = {pid for pid, (ppid, *_rest) in table.items() if ppid in found and pid not in found}
        found |= more
        grew = bool(more)
    return found & set(table)


def evaluate_at_once(args: argparse.Namespace, out: Path, name: str) -> list[dict[str, Any]]:
    """Run the part's evaluations at once; each one's result summary and its processes' CPU and threads."""
    out.mkdir(parents=True, exist_ok=True)
    count, share, pinned = EVAL_PARTS[name]
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    runs = []
    for index in range(count):
        json_path = out / f"{name}_{index}.json"
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(index), "NVFP4_HOST_SHARE": share,
               "NVFP4_SECRET_SEED": os.environ.get("NVFP4_SECRET_SEED", "20261126"), "PYTHONPATH": str(REPO)}
        env.pop("OMP_NUM_THREADS", None)
        command = [sys.executable, "-m", "harness", "eval", args.problem, str(args.file), "--mode", args.mode,
                   "--device", args.device, "--json", str(json_path), "--no-history"]
        if pinned:
            command = ["taskset", "-c", ",".join(map(str, cpus[index * half:(index + 1) * half])), *command]
        log = (out / f"{name}_{index}.log").open("w")
        runs.append({"process": subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT),
                     "json": json_path, "started": time.monotonic(), "cpu": {}, "threads": {}, "log": log})
    busy0 = host_busy()
    while any(run["process"].poll() is None for run in runs):
        table = proc_table()
        for run in runs:
            if "wall_s" in run:
                continue
            for pid in descendants({run["process"].pid}, table):
                _, cpu_s, threads, role = table[pid]
                role = "parent" if pid == run["process"].pid else role if role in ("worker", "reaper") else "other"
                run["cpu"][pid] = (role, cpu_s)
                run["threads"][role] = max(run["threads"].get(role, 0), threads)
            if run["process"].poll() is not None:
                run["wall_s"] = time.monotonic() - run["started"]
        time.sleep(TICK_S)
    busy1 = host_busy()
    summaries = []
    for run in runs:
        run["log"].close()
        cpu_by_role: dict[str, float] = {}
        for role, cpu_s in run["cpu"].values():
            cpu_by_role[role] = round(cpu_by_role.get(role, 0.0) + cpu_s, 2)
        summaries.append({"wall_s": round(run.get("wall_s", time.monotonic() - run["started"]), 2),
                          "exit": run["process"].returncode, "cpu_s": cpu_by_role, "peak_threads": run["threads"],
                          "host_busy_pct": round(100 * (busy1[0] - busy0[0]) / max(1, busy1[1] - busy0[1]), 1),
                          **result_summary(run["json"])})
    return summaries


def result_summary(path: Path) -> dict[str, Any]:
    """The evaluation's phases and its benchmark cases' per-call phases (means over the cases)."""
    if not path.exists():
        return {}
    result = json.loads(path.read_text())
    benches = [c for c in result.get("cases", []) if c.get("kind") == "benchmark" and c.get("overhead_split_ms")]
    split: dict[str, list[float]] = {}
    for case in benches:
        for phase, ms in case["overhead_split_ms"].items():
            split.setdefault(phase, []).append(ms)
    return {"status": result.get("status"), "phases_s": result.get("wall_s", {}),
            "per_call_ms": {k: round(statistics.fmean(v), 3) for k, v in split.items()},
            "overhead_ms": round(statistics.fmean(c.get("overhead_ms") or 0 for c in benches), 3) if benches else None,
            "medians_us": [c.get("timing", {}).get("median_us") for c in benches]}


def copies_at_once(snippet: str, gpus: list[str]) -> list[Any]:
    """The snippet in one process per entry of ``gpus``, all starting their timed copies at one instant."""
    start_at = str(time.time() + 8)
    processes = [subprocess.Popen([sys.executable, "-c", snippet, start_at], stdout=subprocess.PIPE, text=True,
                                  env={**os.environ, "CUDA_VISIBLE_DEVICES": gpu}) for gpu in gpus]
    return [json.loads(p.communicate(timeout=120)[0].strip() or "null") for p in processes]


def mean_of(rows: list[dict[str, Any]], *keys: str) -> float | None:
    values = []
    for row in rows:
        value: Any = row
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, (int, float)):
            values.append(value)
    return round(statistics.fmean(values), 3) if values else None


def markdown(results: dict[str, Any]) -> str:
    evals = {name: rows for name, rows in results.items() if name in EVAL_PARTS and rows}
    phases = sorted({p for rows in evals.values() for r in rows for p in r.get("phases_s", {})
                     if p != "supervisor_notifications"})  # a count, not seconds
    calls = sorted({p for rows in evals.values() for r in rows for p in r.get("per_call_ms", {})})
    lines = ["| part | runs | wall s | host busy % | CPU s parent / worker / other | peak threads parent / worker | "
             + " | ".join(f"{p} s" for p in phases) + " | per call ms: " + " / ".join(calls) + " |",
             "|" + " --- |" * (7 + len(phases))]
    for name, rows in evals.items():
        cpu = " / ".join(str(mean_of(rows, "cpu_s", role)) for role in ("parent", "worker", "other"))
        threads = " / ".join(str(mean_of(rows, "peak_threads", role)) for role in ("parent", "worker"))
        per_call = " / ".join(str(mean_of(rows, "per_call_ms", p)) for p in calls)
        lines.append(f"| {name} | {len(rows)} | {mean_of(rows, 'wall_s')} | {mean_of(rows, 'host_busy_pct')} | {cpu} | "
                     f"{threads} | " + " | ".join(str(mean_of(rows, "phases_s", p)) for p in phases)
                     + f" | {per_call} |")
    alone = mean_of(evals.get("alone", []), "wall_s")
    for name in ("pair", "pair_shared", "pair_pinned"):
        wall = mean_of(evals.get(name, []), "wall_s")
        if alone and wall:
            lines.append(f"\n{name}: each evaluation {100 * (wall / alone - 1):+.1f}% against alone")
    for name in ("membw", "pcie"):
        if results.get(name):
            lines.append(f"\n{name}: alone {results[name]['alone']}, two at once {results[name]['pair']}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--file", type=Path, default=REPO / "submissions" / "nvfp4_gemm" / "triton_gemm.py")
    parser.add_argument("--problem", help="default: the file's folder")
    parser.add_argument("--mode", default="leaderboard")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=2, help="each evaluation part this many times, interleaved")
    parser.add_argument("--parts", default=" ".join(PARTS), help=f"any of: {' '.join(PARTS)}")
    args = parser.parse_args()
    args.problem = args.problem or args.file.resolve().parent.name
    parts = args.parts.split()
    if unknown := set(parts) - set(PARTS):
        parser.error(f"unknown part(s) {sorted(unknown)}: choose among {' '.join(PARTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"cpus": len(os.sched_getaffinity(0)), "file": str(args.file)}
    if any(p in EVAL_PARTS for p in parts):  # compile caches filled before any measured part (kept apart)
        results["warmup"] = evaluate_at_once(args, args.out / "warmup", "alone")
    for round_index in range(args.rounds):
        for name in (p for p in parts if p in EVAL_PARTS):
            print(f"round {round_index + 1}: {name}", file=sys.stderr)
            results.setdefault(name, []).extend(evaluate_at_once(args, args.out, name))
    if "membw" in parts:
        results["membw"] = {"alone": copies_at_once(MEMBW, [""]), "pair": copies_at_once(MEMBW, ["", ""])}
    if "pcie" in parts and args.device == "cuda":
        results["pcie"] = {"alone": copies_at_once(PCIE, ["0"]), "pair": copies_at_once(PCIE, ["0", "1"])}
    (args.out / "host_share.json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    (args.out / "host_share.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
