"""Compare harness eval results with the same files' results through the service (service_check.sh).

Usage: python scripts/service_compare.py LOCAL_DIR SERVICE_DIR  (JSON files of the same names).
Prints a Markdown table (verdicts, geomeans, their ratio, the worst per-shape median ratio) and
exits 1 when a verdict or exit code differs or a file has no service result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def medians(result: dict) -> dict[str, float]:
    return {json.dumps(c["case"], sort_keys=True): c["timing"]["median_us"]
            for c in result.get("cases", []) if c["kind"] == "benchmark" and c.get("timing")}


def main(local_dir: str, service_dir: str) -> int:
    rows, bad = [], 0
    for local_path in sorted(Path(local_dir).glob("*.json")):
        service_path = Path(service_dir) / local_path.name
        local = json.loads(local_path.read_text())
        if not service_path.is_file():
            rows.append(f"| {local_path.stem} | {local['status']} | (no service result) | | | |")
            bad += 1
            continue
        remote = json.loads(service_path.read_text())
        same = (local["status"], local["exit_code"]) == (remote["status"], remote["exit_code"])
        bad += not same
        a, b = local.get("geomean_us"), remote.get("geomean_us")
        ratio = f"{b / a:.3f}" if a and b else "-"
        pairs = [(medians(local)[k], v) for k, v in medians(remote).items() if k in medians(local)]
        worst = max((max(x / y, y / x) for x, y in pairs), default=None)
        geomeans = f"{f'{a:.2f}' if a else '-'} / {f'{b:.2f}' if b else '-'}"
        rows.append(f"| {local_path.stem} | {local['status']} | {remote['status']}{'' if same else ' (DIFFERS)'} "
                    f"| {geomeans} | {ratio} | {f'{worst:.3f}' if worst else '-'} |")
    print("| file | harness eval | through the service | geomean us (eval / service) | service/eval "
          "| worst shape ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
