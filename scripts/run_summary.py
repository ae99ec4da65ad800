"""One line per benchmark case of one or more RunResult JSON files: median, runs, sealed or not.

    python3 scripts/run_summary.py RESULT.json [...]

"Sealed" means the case's times came from the compiled core (its timing method says so); the
parent rejects any unsealed GPU result when the core is built, so a passed case that reads
"sealed" had every MAC verified.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def summary_lines(result: dict) -> list[str]:
    lines = [f"{result['problem']} {Path(result['submission_path']).name} mode={result['mode']} "
             f"status={result['status']} exit={result['exit_code']} rankable={result.get('rankable')}"]
    for case in result["cases"]:
        timing = case.get("timing")
        if case["kind"] != "benchmark" or not timing:
            continue
        shape = " ".join(f"{k}={v}" for k, v in case["case"].items() if k != "seed")
        sealed = "sealed" if "compiled code" in timing["method"] else "NOT sealed"
        clocks = "".join(f", {label} {case[key]:.3f} us" for key, label in
                         (("event_overhead_us", "event overhead"), ("second_clock_us", "second clock"))
                         if case.get(key) is not None)  # what moves a short median by process (docs/timing.md, run 43)
        lines.append(f"  {shape}: median {timing['median_us']:.2f} us over {timing['runs']} calls, {sealed}, "
                     f"harness {case.get('overhead_ms', 0):.1f} ms/call{clocks}")
    return lines


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print("\n".join(summary_lines(json.loads(Path(name).read_text()))))
