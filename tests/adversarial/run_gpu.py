"""Run the adversarial suite on a CUDA machine: every gpu row, and the cpu rows too, on the GPU.

    python tests/adversarial/run_gpu.py OUT.json [--only TEXT[,TEXT...]] [--cpu-rows cuda|cpu|both|none]
                                                 [--timeout-scale X] [--part K/N]

--part K/N runs every N-th row starting at the K-th (1-based), plus the honest twins those rows
are held against, so that the suite can be split across device calls of limited length.

Prints expected against observed for each row as it finishes, then the whole table (markdown),
and writes the table as JSON to OUT.json. Exit status 0 when every row that ran got its verdict.
Rows run one after another, so that no row's timing shares the GPU with another's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adversarial_suite import Observed, as_json, faster_than_twin, load_rows, markdown_table, run_row


def device_info() -> dict:
    import torch

    info = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["name"] = torch.cuda.get_device_name()
        major, minor = torch.cuda.get_device_capability()
        info["capability"] = f"{major}.{minor}"
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="write the results here as JSON")
    parser.add_argument("--only", help="run only rows whose file name contains this text (or one of these, "
                                       "comma-separated)")
    parser.add_argument("--cpu-rows", choices=("cuda", "cpu", "both", "none"), default="cuda",
                        help="where the cpu rows run (default: on the GPU, like the gpu rows)")
    parser.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every stage limit")
    parser.add_argument("--part", default="1/1", help="K/N: run rows K, K+N, K+2N, ... of the plan (1-based)")
    args = parser.parse_args(argv)
    try:
        part, parts = (int(v) for v in args.part.split("/"))
    except ValueError:
        parser.error(f"--part {args.part!r}: give K/N with whole numbers, e.g. 1/2")
    if not 1 <= part <= parts:
        parser.error(f"--part {args.part}: K must be between 1 and N")

    info = device_info()
    if not info["cuda"]:
        print("error: no CUDA device visible; the CPU rows run in CI: pytest tests/adversarial", file=sys.stderr)
        return 2
    wanted = args.only.split(",") if args.only else []
    rows = [row for row in load_rows() if not wanted or any(text in row.file for text in wanted)]
    plan = []
    for row in rows:
        if row.platform == "gpu":
            plan.append((row, "cuda"))
        else:
            plan += [(row, device) for device in {"cuda": ["cuda"], "cpu": ["cpu"], "both": ["cuda", "cpu"],
                                                  "none": []}[args.cpu_rows]]
    chosen = plan[part - 1::parts]
    twins = {row.twin for row, _ in chosen if row.twin}
    plan = [entry for entry in plan if entry[0].file in twins and entry not in chosen] + chosen
    observed: dict[str, dict[str, Observed]] = {"cuda": {}, "cpu": {}}
    failures = 0
    for index, (row, device) in enumerate(plan, 1):
        try:
            got = run_row(row, device, args.timeout_scale)
        except Exception as error:  # a harness bug: record it and go on with the other rows
            got = Observed("harness-error", f"{type(error).__name__}: {error}", 0.0)
        observed[device][row.file] = got
        verdict = "skip" if got.skipped else ("ok" if got.matches(row) else "MISMATCH")
        failures += verdict == "MISMATCH"
        print(f"[{index}/{len(plan)}] {verdict:8s} {device:4s} {row.file}: expected {row.status} "
              f"{row.reason!r}, got {got.status}: {got.reason[:300]} ({got.elapsed_s:.1f} s)", flush=True)
    for row in rows:  # twins run before the rows that name them only by luck of order: check at the end
        if row.known_hole and row.file in observed["cuda"] and row.twin in observed["cuda"]:
            print(f"KNOWN HOLE cuda {row.file}: {observed['cuda'][row.file].geomean_us} us against its twin's "
                  f"{observed['cuda'][row.twin].geomean_us} us (docs/security.md)", flush=True)
        gap = faster_than_twin(row, observed["cuda"])
        if gap:
            failures += 1
            print(f"MISMATCH cuda {row.file}: passed but faster: {gap}", flush=True)
    for device in ("cuda", "cpu"):
        ran = [row for row in rows if row.file in observed[device]]
        if ran:
            print(f"\n## on {device}\n\n{markdown_table(ran, observed[device])}\n")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({device: as_json([r for r in rows if r.file in seen], seen, info)
                                          for device, seen in observed.items() if seen}, indent=2))
    print(f"{failures} mismatch(es) in {len(plan)} runs; JSON in {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
