"""Where a `harness eval`'s start goes, on a GPU (issue 33: `make eval` at most 10 s).

The run's own breakdown (`wall_s`) says the parent spends 4-5 s before its evaluation begins
(`start`) and the worker 2-2.5 s in its Start after that (its reference, timer and draws). This
measures what those seconds are, three ways, each on the Triton GEMV in benchmark mode:

1. torch alone: the import, then the first CUDA tensor (the context), timed in one fresh process;
2. the parent's imports (`python -X importtime`): the total, and the top modules by their
   cumulative time (the worker's imports are its own process's and not in this list);
3. the parent's whole run under cProfile: the top functions by cumulative time, so that what the
   parent does after its imports and before the evaluation (task files, the vendor's cached
   times, CUDA, the reference's kernels) shows by name.

Writes OUT_DIR/start_profile.json and the profile (OUT_DIR/parent.prof).

    python3 scripts/start_profile.py OUT_DIR
"""

from __future__ import annotations

import json
import pstats
import re
import subprocess
import sys
import time
from pathlib import Path

GEMV = ["nvfp4_gemv", "submissions/nvfp4_gemv/triton_gemv.py", "--mode", "benchmark", "--no-history"]
TORCH_ALONE = ("import time; t = time.perf_counter(); import torch; i = time.perf_counter(); "
               "torch.zeros(1, device='cuda'); torch.cuda.synchronize(); c = time.perf_counter(); "
               "print(round(i - t, 3), round(c - i, 3))")
IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)")


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    return round(time.perf_counter() - started, 3), run


def top_imports(stderr: str, count: int = 15) -> dict:
    """The parent's import seconds in all (its top-level modules), its slowest top-level modules
    (cumulative) and its slowest modules at any depth by their own time."""
    lines = [(m.group(4), int(m.group(1)) / 1e6, int(m.group(2)) / 1e6, not m.group(3))
             for m in IMPORT_LINE.finditer(stderr)]
    top = sorted(((name, round(cumulative, 3)) for name, _, cumulative, first in lines if first), key=lambda r: -r[1])
    own = sorted(((name, round(own, 3)) for name, own, _, _ in lines), key=lambda r: -r[1])
    return {"parent_imports_s": round(sum(s for _, s in top), 3), "slowest_top_level_s": top[:count],
            "slowest_own_s": own[:count]}


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {}
    wall, run = timed([sys.executable, "-c", TORCH_ALONE])
    import_s, cuda_s = (float(x) for x in run.stdout.split()) if run.returncode == 0 else (None, None)
    report["torch_alone"] = {"wall_s": wall, "import_s": import_s, "first_cuda_tensor_s": cuda_s}
    record = out / "importtime.json"
    wall, run = timed([sys.executable, "-X", "importtime", "-m", "harness", "eval", *GEMV, "--json", str(record)])
    phases = json.loads(record.read_text()).get("wall_s") if record.is_file() else None
    report["importtime_run"] = {"wall_s": wall, "exit": run.returncode, **top_imports(run.stderr),
                                "wall_phases_s": phases}
    profile, record = out / "parent.prof", out / "profiled.json"
    wall, run = timed([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "harness", "eval", *GEMV,
                       "--json", str(record)])
    rows = []
    if profile.is_file():
        stats = pstats.Stats(str(profile))
        for (file, line, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
            rows.append((round(cumulative, 3), f"{Path(file).name}:{line} {name}"))
    report["profiled_run"] = {"wall_s": wall, "exit": run.returncode,
                              "top_cumulative_s": sorted(rows, reverse=True)[:40]}
    (out / "start_profile.json").write_text(json.dumps(report, indent=2))
    for key in ("torch_alone", "importtime_run"):
        print(key, json.dumps(report[key]))
    print("\n".join(f"{s:8.3f}  {where}" for s, where in report["profiled_run"]["top_cumulative_s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
