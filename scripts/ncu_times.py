"""A third clock for the timing check: Nsight Compute's gpu__time_duration beside graph replay and
the harness (GPU only; ncu on PATH or in /usr/local/cuda/bin).

For every row of scripts/graph_replay.py's output (file, shape, graph replay us, harness median
us), ncu profiles CALLS calls of the file on that shape (scripts/ncu_target.py), each behind the
reading flush that replay and the core use, with `--cache-control none --clock-control none`: the
same cache policy as replay (ncu's own `all` also invalidates what the reading flush leaves, and cost
0.45-0.67 us more on every short rung: docs/timing.md). The per-call time is the sum of the kernels'
durations over CALLS. Each row says whether each pair is inside issue 38's band: the harness within
max(3%, 0.2 us) of graph replay, graph replay within max(3%, 0.3 us) of ncu; a table of every row
(the one docs/timing.md shows) closes the output and is written beside OUT.json as OUT.md.

    python3 scripts/ncu_times.py GRAPH_REPLAY.json OUT.json
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from graph_replay import in_band  # this folder's script: the band's one definition

from harness.contract.task_spec import load_task, shape_text
from harness.sol.globaltimer import KERNEL_NAME

CALLS = 5
UNIT_US = {"second": 1e6, "s": 1e6, "msecond": 1e3, "ms": 1e3, "usecond": 1.0, "us": 1.0, "nsecond": 1e-3, "ns": 1e-3}


def ncu_binary() -> str:
    found = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    if not Path(found).is_file():
        raise SystemExit("ncu not found: install Nsight Compute or put it on PATH")
    return found


def is_marker(kernel_name: str) -> bool:
    """scripts/ncu_target.py's marker kernel, which opens each shape's kernels."""
    return kernel_name == KERNEL_NAME or kernel_name.startswith(f"{KERNEL_NAME}(")


def durations_by_case_us(csv_text: str, cases: int) -> list[list[float]]:
    """Each shape's gpu__time_duration.sum rows of ncu's --csv output, in us: every marker row opens the
    next shape's list (the marker itself is not kept); a shape with no marker (its run died) gets []."""
    start = csv_text.find('"ID"')
    groups: list[list[float]] = []
    for row in csv.DictReader(io.StringIO(csv_text[start:] if start >= 0 else "")):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        if is_marker(row.get("Kernel Name", "")):
            groups.append([])
        elif groups:
            groups[-1].append(float(row["Metric Value"].replace(",", "")) * UNIT_US[row["Metric Unit"]])
    return groups[:cases] + [[] for _ in range(cases - len(groups))]


def ncu_per_call_us(file: Path, cases: list[dict]) -> list[tuple[float | None, int]]:
    """(ncu's time per call, kernels profiled) per shape, all shapes of the file in one ncu run."""
    command = [ncu_binary(), "--profile-from-start", "off", "--cache-control", "none", "--clock-control", "none",
               "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
               sys.executable, "scripts/ncu_target.py", str(file), str(CALLS), *map(json.dumps, cases)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if run.stderr.strip():
        print(f"{file}: {run.stderr.strip().splitlines()[-1][:300]}", flush=True)
    return [(sum(d) / CALLS if d else None, len(d)) for d in durations_by_case_us(run.stdout, len(cases))]


def main() -> int:
    rows = json.loads(Path(sys.argv[1]).read_text())
    by_file: dict[str, list[dict]] = {}
    for row in rows:  # a row replay could not time (its note says why) is not profiled either
        row["ncu_us"], row["ncu_kernels"] = None, 0
        if not row.get("note"):
            by_file.setdefault(row["file"], []).append(row)
    for name, file_rows in by_file.items():
        file = Path("submissions") / name
        cases = {shape_text(c): c for c in load_task(file.parent.name).benchmarks}
        for row, (ncu_us, kernels) in zip(file_rows, ncu_per_call_us(file, [cases[r["shape"]] for r in file_rows])):
            row["ncu_us"], row["ncu_kernels"] = ncu_us, kernels
    for row in rows:
        row["harness_in_band"] = in_band(row.get("harness_us"), row.get("graph_us"), 0.03, 0.2)
        row["graph_in_band_of_ncu"] = in_band(row.get("graph_us"), row["ncu_us"], 0.03, 0.3)
        print(f"{row['file']} {row['shape']}: harness {row.get('harness_us')} graph {row.get('graph_us')} "
              f"ncu {row['ncu_us']} ({row['ncu_kernels']} kernels / {CALLS} calls); harness~graph "
              f"{row['harness_in_band']}, graph~ncu {row['graph_in_band_of_ncu']}", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(rows, indent=2))
    lines = table(rows)
    Path(sys.argv[2]).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def table(rows: list[dict]) -> list[str]:
    """Every row's clocks and verdicts, as docs/timing.md shows them (a missing figure is '-')."""
    def us(value: float | None) -> str:
        return f"{value:.2f}" if value is not None else "-"

    def ratio(top: float | None, bottom: float | None) -> str:
        return f"{top / bottom:.3f}" if top and bottom else "-"

    lines = ["| file | shape | harness us | replay events us (p10-p90) | replay stamps us | ncu us | "
             "harness / replay | in band | replay / ncu | in band |", "| --- " * 10 + "|"]
    for row in rows:
        spread = (f" ({us(row['graph_p10_us'])}-{us(row.get('graph_p90_us'))})"
                  if row.get("graph_p10_us") is not None else "")
        lines.append(f"| {row['file']} | {row['shape']} | {us(row.get('harness_us'))} | {us(row.get('graph_us'))}"
                     f"{spread} | {us(row.get('stamps_us'))} | {us(row.get('ncu_us'))} | "
                     f"{ratio(row.get('harness_us'), row.get('graph_us'))} | {_verdict(row.get('harness_in_band'))} | "
                     f"{ratio(row.get('graph_us'), row.get('ncu_us'))} | {_verdict(row.get('graph_in_band_of_ncu'))} |")
    judged = [row for row in rows if row.get("harness_in_band") is not None]
    against_ncu = [row for row in rows if row.get("graph_in_band_of_ncu") is not None]
    lines.append(f"harness ~ replay: {sum(r['harness_in_band'] for r in judged)} of {len(judged)} in band; "
                 f"replay ~ ncu: {sum(r['graph_in_band_of_ncu'] for r in against_ncu)} of {len(against_ncu)}; "
                 f"{len(rows) - len(judged)} rows lack the harness or replay")
    return lines


def _verdict(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


if __name__ == "__main__":
    sys.exit(main())
