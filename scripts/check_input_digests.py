"""Stored input digests, and the CPU-vs-GPU identity and speed check of generate_input.

  python scripts/input_digests.py                 compare the CPU inputs of every cpu_tests case
                                                  with tests/data/input_digests.json
  python scripts/input_digests.py --write         regenerate that file (after cpu_tests change)
  python scripts/input_digests.py --time          also time generate_input per cpu_tests case
  python scripts/input_digests.py --device cuda --out DIR
      on a GPU: for every cpu_tests and contest test case, under the case's seed and a 63-bit
      call seed, the GPU's inputs must equal the CPU's tensor by tensor (and the cpu_tests ones
      the stored digests); then generate_input is timed on the GPU for every benchmark case
      (median of --repeats calls, each with fresh seeds). Writes DIR/input_digests.json and
      DIR/input_digests.txt.

Exits 0 when everything matches, 1 on any mismatch, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.contract.task_spec import case_text, list_problems, load_task
from harness.judge.verdict.seeds import call_seed
from problems.shared.input_digests import (
    DIGESTS_PATH,
    cpu_test_cases,
    current_digests,
    differences,
    generate,
    read_stored,
    tree_digests,
    write_stored,
)

CALL_SEED_SECRET = 0x5EED
"""A fixed secret for the identity check's second seed: call seeds are 63-bit, case seeds small."""


def identity_rows(device: str) -> list[dict[str, Any]]:
    """CPU against ``device`` for every cpu_tests and contest test case, under two seeds each."""
    rows = []
    for problem in list_problems():
        task = load_task(problem)
        for kind, cases in (("cpu_test", task.cpu_tests), ("test", task.tests)):
            for case in cases:
                for seed in (case["seed"], call_seed(case["seed"], 1, CALL_SEED_SECRET)):
                    seeded = {**case, "seed": seed}
                    cpu = tree_digests(generate(problem, seeded, "cpu"))
                    gpu = tree_digests(generate(problem, seeded, device))
                    differ = sorted(path for path in cpu.keys() | gpu.keys() if cpu.get(path) != gpu.get(path))
                    rows.append({"problem": problem, "kind": kind, "case": seeded, "tensors": len(cpu),
                                 "identical": not differ, "differ": differ})
    return rows


def timing_rows(device: str, repeats: int, cases: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Median wall time of generate_input on ``device`` per case, each call with a fresh seed."""
    synchronize = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    rows = []
    for problem, case in cases:
        times_ms = []
        for index in range(repeats + 2):  # two warm-up calls (allocator, kernels' first launch)
            seeded = {**case, "seed": call_seed(case["seed"], index, CALL_SEED_SECRET)}
            synchronize()
            started = time.perf_counter()
            data = generate(problem, seeded, device)
            synchronize()
            times_ms.append((time.perf_counter() - started) * 1e3)
            del data
        measured = times_ms[2:]
        rows.append({"problem": problem, "case": case, "median_ms": statistics.median(measured),
                     "min_ms": min(measured), "max_ms": max(measured), "calls": len(measured)})
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows


def timing_lines(device: str, rows: list[dict[str, Any]]) -> list[str]:
    return [f"generate_input on {device}: median {r['median_ms']:8.3f} ms (min {r['min_ms']:.3f}, max "
            f"{r['max_ms']:.3f}, {r['calls']} calls)  {r['problem']} {case_text(r['case'])}" for r in rows]


def check_device(device: str, out_dir: Path, repeats: int, digests: Path) -> int:
    stored = read_stored(digests)
    stored_lines = differences(stored, current_digests("cpu"))
    device_lines = differences(stored, current_digests(device))
    identity = identity_rows(device)
    benchmarks = [(problem, case) for problem in list_problems() for case in load_task(problem).benchmarks]
    timing = timing_rows(device, repeats, benchmarks)
    mismatches = stored_lines + device_lines + [
        f"{r['problem']} {case_text(r['case'])}: {', '.join(r['differ'])} differ between cpu and {device}"
        for r in identity if not r["identical"]
    ]
    lines = [f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}"]
    lines += [f"{'identical' if r['identical'] else 'MISMATCH':<9}  {r['kind']:<8} {r['problem']} "
              f"{case_text(r['case'])}  ({r['tensors']} tensors)" for r in identity]
    lines += [f"stored digests, cpu_tests on cpu: {'match' if not stored_lines else 'MISMATCH'}",
              f"stored digests, cpu_tests on {device}: {'match' if not device_lines else 'MISMATCH'}"]
    lines += timing_lines(device, timing)
    lines += mismatches or ["all inputs identical"]
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "identity": identity,
              "timing": timing, "mismatches": mismatches}
    (out_dir / "input_digests.json").write_text(json.dumps(report, indent=1) + "\n")
    (out_dir / "input_digests.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if mismatches else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help=f"rewrite {DIGESTS_PATH.name} from the CPU")
    parser.add_argument("--device", default="cpu", help="cuda: check GPU against CPU and time generation")
    parser.add_argument("--out", type=Path, help="directory for the device report (required with --device cuda)")
    parser.add_argument("--repeats", type=int, default=20, help="timed generate_input calls per benchmark case")
    parser.add_argument("--time", action="store_true", help="on the CPU: also time generate_input per cpu_tests case")
    parser.add_argument("--digests", type=Path, default=DIGESTS_PATH, help="the stored digests file")
    args = parser.parse_args(argv)
    if args.device != "cpu":
        if args.write or args.out is None:
            parser.error("--device cuda takes --out DIR and no --write")
        if not torch.cuda.is_available():
            print(f"no GPU visible for --device {args.device}; run this on the GPU machine", file=sys.stderr)
            return 2
        return check_device(args.device, args.out, args.repeats, args.digests)
    current = current_digests("cpu")
    if args.write:
        write_stored(current, args.digests)
        print(f"wrote digests of {len(current)} cpu_tests cases to {args.digests}")
        return 0
    if not args.digests.is_file():
        print(f"no stored digests at {args.digests}; create them with --write", file=sys.stderr)
        return 2
    if args.time:
        print("\n".join(timing_lines("cpu", timing_rows("cpu", args.repeats, cpu_test_cases()))))
    lines = differences(read_stored(args.digests), current)
    print("\n".join(lines) if lines else f"all {len(current)} cpu_tests cases match {args.digests}")
    if lines:
        print("inputs changed: if on purpose, rerun with --write and commit the file", file=sys.stderr)
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
