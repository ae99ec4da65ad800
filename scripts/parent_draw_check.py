"""Issue 33: the parent's draw and reference replayed from CUDA graphs are ``generate_input``'s and ``ref_kernel``'s,
bit for bit, and what they cost.

    python3 scripts/parent_draw_check.py OUT.json [--problems nvfp4_gemv,...] [--calls N]

For every test and benchmark shape of each problem (the NVFP4 four: 52 shapes), as the parent's checker
draws on a CUDA check device (harness/judge/verdict/graph_draws.py: a shape's first draw and reference
eager, its second captured, the draw's graph then the reference's on its tensors, the rest replayed):
N calls under fresh seeds, the shapes taken in turn (call 1 of each, then call 2 of each, ...: the
references' graphs share one memory pool, so a shape's replay follows other shapes' replays), every
tensor of the inputs compared with ``generate_input`` under the same seed and every tensor of the
expected output with ``ref_kernel`` run eagerly on those inputs, and the ms per draw+reference
(synchronized, median) eager (before) and replayed (after, calls 3 on). Exit status 0 when every tensor
of every call is identical and every shape's draw and reference replay from their graphs.
"""

from __future__ import annotations

import importlib
import json
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from drawn_check import draw_check_arguments, same_bits

from harness.contract.task_spec import load_task, shape_text
from harness.contract.tensor_tree import tensors_in
from harness.judge.verdict.graph_draws import GraphDraws, expected_kernel


def timed_ms(gpu: torch.device, draw: Callable[..., object], /, *args: object,
             **kwargs: object) -> tuple[object, float]:
    """(what ``draw(*args, **kwargs)`` returned, its ms with ``gpu``'s work finished)."""
    started = time.perf_counter()
    out = draw(*args, **kwargs)
    torch.cuda.synchronize(gpu)
    return out, 1e3 * (time.perf_counter() - started)


def check(problem: str, calls: int, device: torch.device) -> list[dict]:
    """Every shape of ``problem``: identical inputs and expected output per call, and ms per draw+reference
    eager and replayed."""
    task = load_task(problem)
    reference = importlib.import_module(task.reference_module)
    expected_by = expected_kernel(reference)
    graphs = GraphDraws(reference.generate_input, device, expected_by)
    cases = list({shape_text(c): c for c in list(task.tests) + list(task.benchmarks)}.values())
    figures: dict[str, dict[str, list]] = {shape_text(c): {"identical": [], "before": [], "after": []} for c in cases}

    def eager(seeded: dict) -> tuple[object, object]:
        inputs = reference.generate_input(**seeded, device=device)
        return inputs, expected_by(inputs) if expected_by is not None else None

    for call in range(calls):
        for case in cases:
            seeded = {**case, "seed": secrets.randbits(63)}
            drawn, replay_ms = timed_ms(device, graphs.draw, seeded)
            plain, plain_ms = timed_ms(device, eager, seeded)
            ours, theirs = tensors_in(drawn), tensors_in(plain)  # the inputs, then the expected output
            mine = figures[shape_text(case)]
            mine["identical"].append(len(ours) == len(theirs) and all(map(same_bits, ours, theirs)))
            mine["before"].append(plain_ms)
            if call >= 2:  # calls 0 and 1 are the eager draw and the captures
                mine["after"].append(replay_ms)
    rows = []
    for case in cases:
        mine = figures[shape_text(case)]
        rows.append({"problem": problem, "shape": shape_text(case), "identical": all(mine["identical"]),
                     "replayed": graphs.replays(case),
                     "reference_replayed": graphs.replays_reference(case) if expected_by is not None else None,
                     "before_ms": round(statistics.median(mine["before"]), 3),
                     "after_ms": round(statistics.median(mine["after"]), 3) if mine["after"] else None})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = draw_check_arguments(__doc__, argv, 8, "draws per shape, at least 3", "the parent's graph draw needs")
    if args is None:
        return 2
    if args.calls < 3:
        print("error: --calls must be at least 3 (an eager draw, the capture, then replays)", file=sys.stderr)
        return 2
    device = torch.device("cuda", 0)
    with torch.cuda.device(device):
        rows = [row for problem in args.problems.split(",") for row in check(problem, args.calls, device)]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2))
    bad = [row for row in rows if not (row["identical"] and row["replayed"] and row["reference_replayed"] is not False)]
    for problem in args.problems.split(","):
        mine = [row for row in rows if row["problem"] == problem]
        before, after = [r["before_ms"] for r in mine], [r["after_ms"] for r in mine]
        print(f"{problem}: ms per draw+reference before {min(before)}-{max(before)}, after {min(after)}-{max(after)}")
    print(f"{len(rows) - len(bad)} of {len(rows)} shapes replayed bit-identical to generate_input and ref_kernel; "
          f"JSON in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
