"""A third clock for the timing check: Nsight Compute's gpu__time_duration beside graph replay and
the harness (GPU only; ncu on PATH or in /usr/local/cuda/bin).

For every row of scripts/graph_replay.py's output (file, shape, replay us, harness median us), ncu
profiles CALLS calls of the file on that shape (scripts/ncu_target.py), each behind the reading flush
that replay and the core use, with `--cache-control none --clock-control none`: the same cache policy
as replay (ncu's own `all` also invalidates what the reading flush leaves, and cost 0.45-0.67 us more
on every short rung: docs/timing.md). The per-call time is the sum of the kernels' durations over
CALLS. First, ncu's floor: FLOOR_CALLS launches of the replay clock's empty kernel (and of its stamp
kernel) under the same settings, held against the replay clock's reading of that empty kernel
(GRAPH_REPLAY's ``_floors.json``; scripts/clock_checks.py, ``NcuFloor``). Each row says whether each
pair is inside issue 38's band: the harness within max(3%, 0.2 us) of replay, replay within max(3%,
0.3 us) of ncu, and, where ncu's floor exceeds replay's by more than 0.3 us, replay within the same
band of ncu less that excess per kernel (labelled 'ncu - floor'; the raw verdict stays beside it);
and the harness within max(3%, 0.2 us) of the stream replay (graph_replay's ``stream_us``: the
yardstick for calls of several kernels).
A table of every row (the one docs/timing.md shows) closes the output and is written beside OUT.json
as OUT.md, with the floor and the second-launch lines (the ladder launched twice per call).

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

from clock_checks import (
    HARNESS_BAND,
    NCU_BAND,
    NcuFloor,
    acceptance_line,
    additivity,
    additivity_lines,
    band_count,
    in_band,
)

from harness.contract.task_spec import load_task, shape_text
from harness.sol.globaltimer import EMPTY_NAME, KERNEL_NAME

CALLS = 5
FLOOR_CALLS = 20
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


def durations_by_name_us(csv_text: str) -> dict[str, list[float]]:
    """Every kernel's gpu__time_duration.sum in us, by kernel name (its parameter list cut off)."""
    start = csv_text.find('"ID"')
    found: dict[str, list[float]] = {}
    for row in csv.DictReader(io.StringIO(csv_text[start:] if start >= 0 else "")):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            name = row.get("Kernel Name", "").split("(")[0]
            found.setdefault(name, []).append(float(row["Metric Value"].replace(",", "")) * UNIT_US[row["Metric Unit"]])
    return found


def profile(label: str, target_args: list[str]) -> str:
    """ncu's --csv output for scripts/ncu_target.py with these arguments; its last stderr line printed."""
    command = [ncu_binary(), "--profile-from-start", "off", "--cache-control", "none", "--clock-control", "none",
               "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
               sys.executable, "scripts/ncu_target.py", *target_args]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600)
    said = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith("==ERROR==")]
    for line in [*dict.fromkeys(said)][:3] or run.stderr.strip().splitlines()[-1:]:
        print(f"{label}: {line[:300]}", flush=True)
    return run.stdout


def ncu_per_call_us(file: Path, cases: list[dict]) -> list[tuple[float | None, int]]:
    """(ncu's time per call, kernels profiled) per shape, all shapes of the file in one ncu run."""
    text = profile(str(file), [str(file), str(CALLS), *map(json.dumps, cases)])
    return [(sum(d) / CALLS if d else None, len(d)) for d in durations_by_case_us(text, len(cases))]


def ncu_floor(replay_floors: Path) -> NcuFloor | None:
    """ncu's empty kernel against the replay clock's (None without the replay's floors or ncu's times)."""
    if not replay_floors.is_file():
        return None
    found = durations_by_name_us(profile("floors", ["--floors", str(FLOOR_CALLS)]))
    empty, stamp = found.get(EMPTY_NAME), found.get(KERNEL_NAME)
    print(f"ncu: empty kernel {_mean(empty)} us, stamp kernel {_mean(stamp)} us ({FLOOR_CALLS} launches each)",
          flush=True)
    if not empty:
        return None
    return NcuFloor(sum(empty) / len(empty), json.loads(replay_floors.read_text())["empty_kernel_us"])


def _mean(values: list[float] | None) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"


def main() -> int:
    replay_json = Path(sys.argv[1])
    rows = json.loads(replay_json.read_text())
    floor = ncu_floor(replay_json.with_name(f"{replay_json.stem}_floors.json"))
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
        judge(row, floor)
        print(f"{row['file']} {row['shape']}: harness {row.get('harness_us')} replay {row.get('replay_us')} "
              f"stream {row.get('stream_us')} ncu {row['ncu_us']} ({row['ncu_kernels']} kernels / {CALLS} calls), "
              f"ncu - floor {row['ncu_less_floor_us']}; harness~replay {row['harness_in_band']}, harness~stream "
              f"{row['harness_in_band_stream']}, replay~ncu "
              f"{row['replay_in_band_of_ncu']}, replay~ncu-floor {row['replay_in_band_of_ncu_less_floor']}", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(rows, indent=2))
    lines = [*table(rows), floor.text() if floor else "ncu floor: not measured (no replay floors or no ncu time)",
             *additivity_lines(additivity(rows))]
    Path(sys.argv[2]).with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def judge(row: dict, floor: NcuFloor | None) -> None:
    """The row's four verdicts, and ncu less its floor per kernel where the floor matters."""
    kernels_per_call = row["ncu_kernels"] / CALLS
    row["ncu_less_floor_us"] = floor.ncu_less_floor_us(row["ncu_us"], kernels_per_call) if floor else None
    row["harness_in_band"] = in_band(row.get("harness_us"), row.get("replay_us"), *HARNESS_BAND)
    row["harness_in_band_stream"] = in_band(row.get("harness_us"), row.get("stream_us"), *HARNESS_BAND)
    row["replay_in_band_of_ncu"] = in_band(row.get("replay_us"), row["ncu_us"], *NCU_BAND)
    row["replay_in_band_of_ncu_less_floor"] = in_band(row.get("replay_us"), row["ncu_less_floor_us"], *NCU_BAND)


def table(rows: list[dict]) -> list[str]:
    """Every row's clocks and verdicts, as docs/timing.md shows them (a missing figure is '-')."""
    def us(value: float | None) -> str:
        return f"{value:.2f}" if value is not None else "-"

    def ratio(top: float | None, bottom: float | None) -> str:
        return f"{top / bottom:.3f}" if top and bottom else "-"

    lines = ["| file | shape | harness us | replay us (p10-p90) | ncu us | ncu - floor us | harness / replay | in band "
             "| stream us | harness in band | replay / ncu | in band | replay / (ncu - floor) | in band |",
             "| --- " * 14 + "|"]
    for row in rows:
        spread = (f" ({us(row['replay_p10_us'])}-{us(row.get('replay_p90_us'))})"
                  if row.get("replay_p10_us") is not None else "")
        lines.append(f"| {row['file']} | {row['shape']} | {us(row.get('harness_us'))} | {us(row.get('replay_us'))}"
                     f"{spread} | {us(row.get('ncu_us'))} | {us(row.get('ncu_less_floor_us'))} | "
                     f"{ratio(row.get('harness_us'), row.get('replay_us'))} | {_verdict(row.get('harness_in_band'))} | "
                     f"{us(row.get('stream_us'))} | {_verdict(row.get('harness_in_band_stream'))} | "
                     f"{ratio(row.get('replay_us'), row.get('ncu_us'))} | "
                     f"{_verdict(row.get('replay_in_band_of_ncu'))} | "
                     f"{ratio(row.get('replay_us'), row.get('ncu_less_floor_us'))} | "
                     f"{_verdict(row.get('replay_in_band_of_ncu_less_floor'))} |")
    lines.append(f"harness ~ replay: {_count(rows, 'harness_in_band')}; harness ~ stream: "
                 f"{_count(rows, 'harness_in_band_stream')}; replay ~ ncu: "
                 f"{_count(rows, 'replay_in_band_of_ncu')}; replay ~ ncu - floor: "
                 f"{_count(rows, 'replay_in_band_of_ncu_less_floor')}; "
                 f"{sum(r.get('harness_in_band') is None for r in rows)} rows lack the harness or replay")
    lines += [acceptance_line(rows, "harness_in_band", "harness ~ graph replay"),
              acceptance_line(rows, "replay_in_band_of_ncu", "replay ~ ncu"),
              acceptance_line(rows, "replay_in_band_of_ncu_less_floor", "replay ~ ncu - floor")]
    return lines


def _count(rows: list[dict], key: str) -> str:
    return f"{band_count(rows, key)} in band"


def _verdict(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


if __name__ == "__main__":
    sys.exit(main())
