"""The output check's fused GPU kernel against torch's float64 passes, on the GPU (issue 33).

1. Verdicts: every case of tests/test_compare_fused.py (special values in every dtype and five
   tolerances, pairs at the allowance's edge, another layout, a ragged tail) and large random outputs
   with planted NaN, infinities and near-misses: the fused count must equal _within's on the same GPU.
   A fused multiply-add in the kernel would show here (it rounds the allowance once, torch twice).
2. Time: the whole count per output, both ways, at the contest's output sizes (the fp8 blockwise
   GEMM's 4096 x 24576 bf16, the NVFP4 GEMM's 128 x 7168), median of 20 synchronized runs, and the
   kernel's first call (its compile) on this machine.

    python3 scripts/compare_check.py OUT.json        (exit 1 if any verdict differs)
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_compare_fused import cases  # the CPU test's cases, one definition

from problems.shared import blockscaled as bs

SIZES = {"fp8 blockwise 4096x24576": (4096, 24576), "nvfp4 gemm 128x7168": (128, 7168)}


def torch_count(got: torch.Tensor, expected: torch.Tensor, tolerance: bs.Tolerance) -> int:
    return int((~bs._within(got, expected, tolerance)[0]).sum())


def planted(shape: tuple[int, int], dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator(device="cuda").manual_seed(seed)
    expected = torch.randn(shape, generator=generator, device="cuda").to(dtype)
    got = (expected.float() * (1 + 0.01 * torch.randn(shape, generator=generator, device="cuda"))).to(dtype)
    flat_got, flat_expected = got.view(-1), expected.view(-1)
    flat_got[::9973] = float("nan")
    flat_expected[::19997] = float("nan")
    flat_got[5::30011] = float("inf")
    flat_expected[5::60013] = float("inf")
    return got, expected


def ms(run) -> float:
    times = []
    for _ in range(20):
        torch.cuda.synchronize()
        started = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times.append(1e3 * (time.perf_counter() - started))
    return round(statistics.median(times), 3)


def both_ms(got: torch.Tensor, expected: torch.Tensor, tolerance: bs.Tolerance) -> dict[str, float]:
    """One output's whole count by torch's float64 passes and by the fused kernel, ms each."""
    return {"torch_ms": ms(lambda: (~bs._within(got, expected, tolerance)[0]).sum()),
            "fused_ms": ms(lambda: bs.fused_mismatches(got, expected, tolerance))}


def main() -> int:
    out: dict = {"verdicts": [], "times": {}}
    started = time.perf_counter()
    got, expected, tolerance = cases()[0]
    int(bs.fused_mismatches(got.cuda(), expected.cuda(), tolerance))
    out["first_call_s"] = round(time.perf_counter() - started, 3)
    differs = 0
    for got, expected, tolerance in cases():
        got, expected = got.cuda(), expected.cuda()
        fused, wanted = int(bs.fused_mismatches(got, expected, tolerance)), torch_count(got, expected, tolerance)
        differs += fused != wanted
        out["verdicts"].append({"dtype": str(expected.dtype), "n": expected.numel(), "fused": fused, "torch": wanted})
    tolerance = bs.Tolerance(rtol=1e-2, atol=1e-2)
    for name, shape in SIZES.items():
        for dtype in (torch.bfloat16, torch.float16):
            got, expected = planted(shape, dtype, seed=len(name))
            fused, wanted = int(bs.fused_mismatches(got, expected, tolerance)), torch_count(got, expected, tolerance)
            differs += fused != wanted
            out["verdicts"].append({"case": name, "dtype": str(dtype), "fused": fused, "torch": wanted})
            out["times"][f"{name} {dtype}"] = both_ms(got, expected, tolerance)
    out["verdicts_differing"] = differs
    Path(sys.argv[1]).write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if k != "verdicts"}, indent=2))
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
