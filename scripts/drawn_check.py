"""Issue 40's drawn inputs on a GPU: the core's replay of a captured draw is the seed's draw, bit for bit.

    python3 scripts/drawn_check.py OUT.json [--problems nvfp4_gemv,...] [--calls N]

For each problem, in this process as a worker would: the compiled core on the GPU, every test and
benchmark shape's draw captured (harness.worker.drawn_inputs), a custom_kernel that keeps what it was
handed; then N timed calls per shape, each under a fresh seed sent masked (input_stage.sealed_seed),
every tensor compared with ``generate_input`` under that seed, and the core's time per call beside a
plain call of the same case (what the draw adds to the harness's time). Exit status 0 when every
tensor of every call is identical. Writes the per-shape figures to OUT.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import secrets
import subprocess
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from harness.contract.task_spec import load_task, shape_text
from harness.contract.tensor_tree import tensors_in
from harness.judge.worker_link import input_stage, worker_spawn
from harness.worker import sealed_core
from harness.worker.drawn_inputs import DrawnInputs

NVFP4 = ("nvfp4_gemv", "nvfp4_gemm", "nvfp4_dual_gemm", "nvfp4_group_gemm")


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Identical bits, element by element, whatever the dtype and strides (NaNs included)."""
    as_int = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(as_int), b.view(as_int))


def check(problem: str, calls: int) -> list[dict]:
    """Every shape of ``problem``: identical tensors per drawn call, and ms per call drawn and plain."""
    task, device = load_task(problem), torch.device("cuda", 0)
    reference = importlib.import_module(task.reference_module)
    key, read_fd = worker_spawn.new_key_pipe()
    timer = sealed_core.SealedTimer(read_fd, device)
    cases = list(task.tests) + list(task.benchmarks)
    drawn = DrawnInputs()
    started = time.perf_counter()
    drawn.capture(reference, cases, device, timer.add_draw, timer.max_draws())
    capture_s = time.perf_counter() - started
    expected: list[torch.Tensor] = []
    verdicts: list[bool] = []

    def kernel(data):
        tensors = tensors_in(data)
        verdicts.append(len(tensors) == len(expected) and all(map(same_bits, tensors, expected)))
        return torch.zeros(1, device=tensors[0].device)

    timer.bind(lambda _: types.SimpleNamespace(custom_kernel=kernel), "drawn_check")
    rows, index = [], 0
    for case in {shape_text(c): c for c in cases}.values():
        drawn_ms, plain_ms, identical = [], [], []
        for _ in range(calls):  # each call at its placement and on its stream, as a worker's (serve_loop.py)
            seed = secrets.randbits(63)
            expected[:] = tensors_in(reference.generate_input(**{**case, "seed": seed}, device=device))
            index, seen = index + 1, len(verdicts)
            draw = drawn.inputs(case, index)
            begun = time.perf_counter()
            timer.use_stream(index)
            answer = timer.time_call(draw.data, index, 0, 100.0, draw=draw.slot,
                                     sealed=input_stage.sealed_seed(key, index, seed))
            drawn_ms.append(1e3 * (time.perf_counter() - begun))
            identical.append(answer[0] == "ok" and len(verdicts) == seen + 1 and verdicts[-1])
            index += 1
            begun = time.perf_counter()
            timer.use_stream(index)
            timer.time_call(draw.data, index, seed, 100.0)  # the same tensors, no draw: the call without it
            plain_ms.append(1e3 * (time.perf_counter() - begun))
        rows.append({"problem": problem, "shape": shape_text(case), "identical": all(identical),
                     "drawn_ms": round(sorted(drawn_ms)[calls // 2], 3),
                     "plain_ms": round(sorted(plain_ms)[calls // 2], 3), "capture_s": round(capture_s, 2)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def draw_check_arguments(doc: str, argv: list[str] | None, calls: int, calls_help: str,
                         needs: str) -> argparse.Namespace | None:
    """This script's and scripts/parent_draw_check.py's command line (OUT, --problems, --calls), or None
    after one line on stderr where no CUDA device is visible (``needs``: what needs it)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="write the per-shape figures here as JSON")
    parser.add_argument("--problems", default=",".join(NVFP4), help="comma-separated (default: the NVFP4 four)")
    parser.add_argument("--calls", type=int, default=calls, help=f"{calls_help} (default {calls})")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(f"error: no CUDA device visible; {needs} a GPU", file=sys.stderr)
        return None
    return args


def main(argv: list[str] | None = None) -> int:
    args = draw_check_arguments(__doc__, argv, 5, "drawn calls per shape", "the drawn inputs need")
    if args is None:
        return 2
    if not sealed_core.sealed_available():
        print("error: the timing core is not built (python setup.py build_ext --inplace)", file=sys.stderr)
        return 2
    if "," in args.problems:  # the core starts once per process: one child per problem
        rows = []
        for problem in args.problems.split(","):
            part = Path(args.out).with_suffix(f".{problem}.json")
            subprocess.run([sys.executable, __file__, str(part), "--problems", problem, "--calls", str(args.calls)],
                           check=False)
            rows += json.loads(part.read_text()) if part.is_file() else [{"problem": problem, "identical": False}]
    else:
        rows = check(args.problems, args.calls)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2))
    bad = [row for row in rows if not row["identical"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} shapes drawn bit-identical by the core; JSON in {args.out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
