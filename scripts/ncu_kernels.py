"""What limits each Triton baseline's kernels: Nsight Compute's throughput summary per kernel (GPU only).

Issue 37 asks why the GEMMs sit at 33-50% of the speed of light; the clock alone cannot say which unit
is the nearest limit. For each file of FILES, ncu profiles one call on each benchmark shape of its
problem (scripts/ncu_target.py: a marker kernel opens each shape, each call behind the reading flush,
`--cache-control none --clock-control none`: the cache policy of the replay clock), with its
SpeedOfLight, Occupancy and LaunchStats sections, and every kernel of the call gets one row: grid and
block, registers, duration, SM, L2 and DRAM throughput (% of peak), achieved occupancy and waves per
SM. Writes OUT.json and a markdown table beside it (OUT.md), which it also prints.

    python3 scripts/ncu_kernels.py OUT.json [FILE ...]
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

from ncu_times import UNIT_US, is_marker, ncu_binary

from harness.contract.task_spec import load_task, shape_text

FILES = (
    "submissions/nvfp4_gemv/triton_gemv.py",
    "submissions/nvfp4_gemm/triton_gemm.py",
    "submissions/nvfp4_dual_gemm/triton_dual_gemm.py",
    "submissions/nvfp4_group_gemm/triton_group_gemm.py",
    "submissions/fp8_blockwise_gemm/triton_blockwise_gemm.py",
)
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats")
# column -> the metric's name in ncu's details page (its display name, not a counter that may not exist)
COLUMNS = {
    "us": "Duration",
    "sm_pct": "Compute (SM) Throughput",
    "l2_pct": "L2 Cache Throughput",
    "dram_pct": "DRAM Throughput",
    "occupancy_pct": "Achieved Occupancy",
    "waves": "Waves Per SM",
    "registers": "Registers Per Thread",
    "grid": "Grid Size",
    "block": "Block Size",
}


def _number(value: str) -> float | None:
    try:
        return float(value.replace(",", ""))
    except ValueError:
        return None


def kernels_by_case(csv_text: str, cases: int) -> list[list[dict]]:
    """Each shape's kernels from ncu's ``--csv --page details`` output, in launch order: a marker kernel
    opens the next shape (and is not kept); each kernel is its name and COLUMNS' values (durations in
    us). A shape whose marker never came (its run died) gets []."""
    start = csv_text.find('"ID"')
    groups: list[list[dict]] = []
    current: dict[str, dict] = {}
    wanted = {name: column for column, name in COLUMNS.items()}
    for row in csv.DictReader(io.StringIO(csv_text[start:] if start >= 0 else "")):
        name = row.get("Kernel Name", "")
        if is_marker(name):
            if row["ID"] not in current:
                groups.append([])
                current = {row["ID"]: {}}
            continue
        if not groups or row.get("Metric Name") not in wanted:
            continue
        kernel = current.get(row["ID"])
        if kernel is None:
            kernel = current[row["ID"]] = {"kernel": name.split("(")[0]}
            groups[-1].append(kernel)
        value = _number(row.get("Metric Value", ""))
        if value is not None and wanted[row["Metric Name"]] == "us":
            value *= UNIT_US.get(row.get("Metric Unit", "us"), 1.0)
        kernel[wanted[row["Metric Name"]]] = value
    return groups[:cases] + [[] for _ in range(cases - len(groups))]


def profile(path: str) -> list[dict]:
    """One row per kernel of one call on every benchmark shape of ``path``'s problem."""
    problem = Path(path).parent.name
    cases = load_task(problem).benchmarks
    command = [ncu_binary(), "--profile-from-start", "off", "--cache-control", "none", "--clock-control", "none",
               "--csv", "--page", "details", *[arg for s in SECTIONS for arg in ("--section", s)],
               sys.executable, "scripts/ncu_target.py", path, "1", *[json.dumps(case) for case in cases]]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if run.returncode:
        said = (run.stderr.strip() or run.stdout.strip()).splitlines()
        print(f"{path}: ncu exit {run.returncode}: {said[-1] if said else 'it printed nothing'}")
    rows = []
    for case, kernels in zip(cases, kernels_by_case(run.stdout, len(cases))):
        rows += [{"file": path, "shape": shape_text(case), **kernel} for kernel in kernels]
    return rows


def _cell(value: object) -> str:
    """A figure as ncu printed it (no trailing .0 on counts); '-' where ncu gave none."""
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def table(rows: list[dict]) -> str:
    head = ["file", "shape", "kernel", "grid x block", "registers", "us", "SM %", "L2 %", "DRAM %", "occupancy %",
            "waves"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [Path(r["file"]).name, r["shape"], r["kernel"], f"{_cell(r.get('grid'))} x {_cell(r.get('block'))}",
                 *(_cell(r.get(key)) for key in ("registers", "us", "sm_pct", "l2_pct", "dram_pct", "occupancy_pct",
                                                  "waves"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    out = Path(sys.argv[1])
    rows = [row for path in (sys.argv[2:] or FILES) for row in profile(path)]
    out.write_text(json.dumps(rows, indent=1))
    text = table(rows)
    out.with_suffix(".md").write_text(text + "\n")
    print(text)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
