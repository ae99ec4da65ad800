"""Issue 33: the parent's own draw replayed from a CUDA graph is ``generate_input``'s, bit for bit, and what it costs.

    python3 scripts/parent_draw_check.py OUT.json [--problems nvfp4_gemv,...] [--calls N]

For every test and benchmark shape of each problem (the NVFP4 four: 52 shapes), as the parent's checker
draws on a CUDA check device (harness/judge/verdict/graph_draws.py: a shape's first draw eager, its
second captured, the rest replayed): N calls under fresh seeds, every tensor compared with
``generate_input`` under the same seed, and the ms per draw (synchronized, median) of ``generate_input``
(before) and of the replay (after, calls 3 on). Exit status 0 when every tensor of every call is identical.
"""

from __future__ import annotations

import argparse
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
from drawn_check import NVFP4, same_bits

from harness.contract.task_spec import load_task, shape_text
from harness.contract.tensor_tree import tensors_in
from harness.judge.verdict.graph_draws import GraphDraws


def timed_ms(gpu: torch.device, draw: Callable[..., object], /, *args: object,
             **kwargs: object) -> tuple[object, float]:
    """(what ``draw(*args, **kwargs)`` returned, its ms with ``gpu``'s work finished)."""
    started = time.perf_counter()
    out = draw(*args, **kwargs)
    torch.cuda.synchronize(gpu)
    return out, 1e3 * (time.perf_counter() - started)


def check(problem: str, calls: int, device: torch.device) -> list[dict]:
    """Every shape of ``problem``: identical tensors per call, and ms per draw eager and replayed."""
    task = load_task(problem)
    reference = importlib.import_module(task.reference_module)
    graphs = GraphDraws(reference.generate_input, device)
    rows = []
    for case in {shape_text(c): c for c in list(task.tests) + list(task.benchmarks)}.values():
        identical, before_ms, after_ms = [], [], []
        for call in range(calls):
            seeded = {**case, "seed": secrets.randbits(63)}
            drawn, replay_ms = timed_ms(device, graphs.draw, seeded)
            expected, plain_ms = timed_ms(device, reference.generate_input, **seeded, device=device)
            ours, theirs = tensors_in(drawn), tensors_in(expected)
            identical.append(len(ours) == len(theirs) and all(map(same_bits, ours, theirs)))
            before_ms.append(plain_ms)
            if call >= 2:  # calls 0 and 1 are the eager draw and the capture
                after_ms.append(replay_ms)
        rows.append({"problem": problem, "shape": shape_text(case), "identical": all(identical),
                     "replayed": graphs.replays(case),
                     "before_ms": round(statistics.median(before_ms), 3),
                     "after_ms": round(statistics.median(after_ms), 3) if after_ms else None})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="write the per-shape figures here as JSON")
    parser.add_argument("--problems", default=",".join(NVFP4), help="comma-separated (default: the NVFP4 four)")
    parser.add_argument("--calls", type=int, default=8, help="draws per shape, at least 3 (default 8)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: no CUDA device visible; the parent's graph draw needs a GPU", file=sys.stderr)
        return 2
    if args.calls < 3:
        print("error: --calls must be at least 3 (an eager draw, the capture, then replays)", file=sys.stderr)
        return 2
    device = torch.device("cuda", 0)
    with torch.cuda.device(device):
        rows = [row for problem in args.problems.split(",") for row in check(problem, args.calls, device)]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2))
    bad = [row for row in rows if not (row["identical"] and row["replayed"])]
    for problem in args.problems.split(","):
        mine = [row for row in rows if row["problem"] == problem]
        print(f"{problem}: ms per draw before {min(r['before_ms'] for r in mine)}-{max(r['before_ms'] for r in mine)}, "
              f"after {min(r['after_ms'] for r in mine)}-{max(r['after_ms'] for r in mine)}")
    print(f"{len(rows) - len(bad)} of {len(rows)} shapes replayed bit-identical to generate_input; JSON in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
