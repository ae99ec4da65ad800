"""Why Nsight Compute reads 0.6-1.3 us more than graph replay on kernels under 10 us (issue 38; GPU only).

Three hypotheses, each with the measurement here that could refute it (rungs of the timing ladder
under 10 us by default; ncu on PATH or in /usr/local/cuda/bin):

H1 front end: gpu__time_duration includes each launch's front end (dispatch, ramp, drain), which
   back-to-back kernels in one graph overlap. Decided by the ncu step (scripts/ncu_times.py): ncu's
   duration of an empty kernel against the replay clock's reading of the same kernel
   (scripts/clock_checks.py, ``NcuFloor``). Here, a second test: gpu__time_duration minus the SMs' own
   span (sm__cycles_elapsed.max over its clock) is the time outside the SMs; H1 predicts it is the gap
   between ncu and the replay clock (harness.sol.replay_clock's stamps), printed beside it.
H2 clocks: with --clock-control none the GPU may idle down between ncu's passes, so the kernel starts
   at a lower clock. ncu under `base` (locked) and `none`, and the SM clock each read
   (sm__cycles_elapsed.avg.per_second). Refuted when the clock under `none` is the timed runs'
   (nvidia-smi's, clocks.csv) and base differs from none by what the clock ratio predicts.
H3 caches: --cache-control all invalidates more than the reading flush evicts (instruction and
   constant caches, TLBs). ncu under `all` and `none`. Refuted when they differ by under 0.3 us.

    python3 scripts/ncu_short_kernels.py OUT_DIR [FILE ['CASE_JSON' ...]]
Writes OUT_DIR/ncu_short_kernels.json (one row per kernel, every figure) and prints a table.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

from ncu_times import UNIT_US, is_marker, ncu_binary  # this folder's script: the third clock of the fidelity table

from harness.contract.task_spec import load_task
from harness.sol.replay_clock import ReplayClock, load_shipped, shape_inputs

LADDER = Path("submissions/timing_ladder/triton_ladder.py")
CALLS = 5
METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg.per_second")
NCU_VARIANTS = {"clock none, cache all": ("none", "all"), "clock base, cache all": ("base", "all"),
                "clock none, cache none": ("none", "none")}
CLOSE_US = 0.3
SHORT_US = 10.0
"""Kernels the gap is about: graph replay under this (every ladder rung under it, unless cases are named)."""


def metric_values(csv_text: str) -> dict[str, list[float]]:
    """Every row of ncu's --csv --print-units base output: times in us, cycles as counts, rates in Hz."""
    start = csv_text.find('"ID"')
    found: dict[str, list[float]] = {}
    for row in csv.DictReader(io.StringIO(csv_text[start:] if start >= 0 else "")):
        if is_marker(row.get("Kernel Name", "")):  # scripts/ncu_target.py's marker: not the file's kernel
            continue
        unit, value = row.get("Metric Unit", ""), float(row["Metric Value"].replace(",", ""))
        if unit in UNIT_US:
            value *= UNIT_US[unit]
        elif "/" in unit and unit.split("/")[1] in UNIT_US:  # a rate per time unit: to per second
            value *= 1e6 / UNIT_US[unit.split("/")[1]]
        found.setdefault(row.get("Metric Name", ""), []).append(value)
    return found


def ncu_variant(file: Path, case: dict, clock: str, cache: str) -> dict[str, float | None]:
    """Per call: ncu's duration, the SMs' span (max cycles over the clock), the SM clock in MHz."""
    command = [ncu_binary(), "--profile-from-start", "off", "--cache-control", cache, "--clock-control", clock,
               "--metrics", ",".join(METRICS), "--csv", "--print-units", "base",
               sys.executable, "scripts/ncu_target.py", str(file), str(CALLS), json.dumps(case)]
    values = metric_values(subprocess.run(command, capture_output=True, text=True, timeout=600).stdout)
    durations, cycles, rates = (values.get(m, []) for m in METRICS)
    if not durations:
        return {"ncu_us": None, "sm_span_us": None, "sm_mhz": None}
    spans = [c / r * 1e6 for c, r in zip(cycles, rates) if r]
    return {"ncu_us": sum(durations) / CALLS, "sm_span_us": sum(spans) / CALLS if spans else None,
            "sm_mhz": sum(rates) / len(rates) / 1e6 if rates else None}


def verdicts(row: dict) -> dict[str, str]:
    """H1's second test as figures, H2 as figures, H3 held or refuted, by the module docstring's rules."""
    default = row["clock none, cache all"]
    ncu, span = default["ncu_us"], default["sm_span_us"]
    if ncu is None:
        return {"H1": "open (no ncu time)", "H2": "open", "H3": "open"}
    h1 = ("open (no SM span)" if span is None else
          f"outside the SMs {ncu - span:.2f} us, ncu - replay {ncu - row['replay_us']:+.2f} us")
    base, no_cache = row["clock base, cache all"]["ncu_us"], row["clock none, cache none"]["ncu_us"]
    h2 = "open" if base is None else f"base - none = {base - ncu:+.2f} us, SM clock under none {default['sm_mhz']} MHz"
    h3 = "open" if no_cache is None else ("refuted" if abs(ncu - no_cache) < CLOSE_US else "held")
    return {"H1": h1, "H2": h2, "H3": h3}


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    file = Path(sys.argv[2]) if len(sys.argv) > 2 else LADDER
    named = [json.loads(c) for c in sys.argv[3:]]
    kernel, clock, rows = load_shipped(file), ReplayClock(), []
    print(f"replay clock floors: {clock.floors()}", flush=True)
    for case in named or load_task(file.parent.name).benchmarks:
        reading = clock.time(kernel, shape_inputs(file.parent.name, case))
        row = {"file": str(file), "case": case, "replay_us": reading.us}
        if not named and row["replay_us"] >= SHORT_US:
            continue
        row.update({name: ncu_variant(file, case, *how) for name, how in NCU_VARIANTS.items()})
        row["verdicts"] = verdicts(row)
        rows.append(row)
        default = row["clock none, cache all"]
        print(f"{case}: replay {row['replay_us']:.2f} us; "
              f"ncu {default['ncu_us']} us (SM span {default['sm_span_us']} us "
              f"at {default['sm_mhz']} MHz), base clock {row['clock base, cache all']['ncu_us']}, cache none "
              f"{row['clock none, cache none']['ncu_us']}; {row['verdicts']}", flush=True)
    (out / "ncu_short_kernels.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
