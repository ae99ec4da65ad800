"""The fused block kernel (reference/block_kernel.py) and the int8 digits (reference/limb_product.py)
against the float64 decode: bit for bit.

The kernels run under ``TRITON_INTERPRET=1`` in a subprocess (the variable must be set before
triton is imported, and another test may have imported it without). Shapes: every cpu test,
ragged and contest test shape of the four NVFP4 problems whose interpreted run stays small
(the GPU step ``scripts/parent_costs.py --references`` compares every test and benchmark shape),
every e2m1 code against every e4m3 scale byte (NaN, subnormals, negatives), strided views. The
digits run where CUDA would choose them (``limb_product.fits``), the block kernel elsewhere.
Every shipped test and benchmark shape is shown inside the exactness bound (no GPU needed).
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys

import problem_cases
import pytest
import torch

from problems.shared.operand_formats import NVFP4, scale_table
from reference import block_kernel

INTERPRETED_WORK = 2**23
"""Largest M * max(N, 16) * K * L of a case the interpreter runs here (about 2 s)."""

WORKER = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, sys.argv[1])
import importlib, torch
from reference import block_kernel, limb_product, ops

# Large tiles: the interpreter's cost is per program and block step.
block_kernel.tiles = lambda rows_b: (256, 16) if rows_b <= 16 else (256, 256)
block_kernel.splits = lambda programs, blocks, device: min(3, blocks)  # the split over K and its sum, exercised
cases, planted = json.loads(sys.argv[2])
bits = lambda t: t.view({2: torch.int16, 8: torch.int64}[t.element_size()])
out = {"problems": [], "codes": None, "views": None}

used = []
def cuda_choice(device, shape=None):  # ops.pick_backend on a GPU
    used.append(shape is not None and limb_product.fits(*shape))
    return "limbs" if used[-1] else "blocks"

def with_backend(backend, fn, *args):
    ops.pick_backend = cuda_choice if backend == "cuda" else (lambda device, shape=None: backend)
    return fn(*args)

for name, case in cases:
    reference = importlib.import_module(f"problems.{name}.reference")
    data = reference.generate_input(**case, device="cpu")
    new = with_backend("blocks", reference.ref_kernel, data)
    old = with_backend("decode", reference.ref_kernel, data)
    used.clear()
    chosen = with_backend("cuda", reference.ref_kernel, data)
    new, old, chosen = (x if isinstance(x, list) else [x] for x in (new, old, chosen))
    row = {"name": name, "case": case, "equal": all(torch.equal(bits(x), bits(y)) for x, y in zip(new, old)),
           "limbs": all(used), "chosen_equal": all(torch.equal(bits(x), bits(y)) for x, y in zip(chosen, old))}
    if [name, case] in planted:  # a correct output passes the check, one element off fails it
        correct = [x.clone() for x in old]
        wrong = [x.clone() for x in old]
        middle = wrong[-1].view(-1)[wrong[-1].numel() // 2 :]
        middle[0] = 2 * middle[0] + 1  # off by |x| + 1: beyond atol + rtol |x| at any magnitude
        unwrap = (lambda xs: xs) if name == "nvfp4_group_gemm" else (lambda xs: xs[0])
        row["checks"] = [with_backend("blocks", reference.check_implementation, data, unwrap(x))[0]
                         for x in (correct, wrong)]
    out["problems"].append(row)

# Every code against every scale byte: A row r, block j has scale byte 16 r + j; B holds all codes.
a = torch.arange(256, dtype=torch.uint8).repeat(16, 8)[:16, :128].contiguous()  # 16 x 256 codes
sfa = torch.arange(256, dtype=torch.uint8).view(16, 16)
b = torch.arange(256, dtype=torch.uint8).view(2, 128).repeat(9, 1)[:17].contiguous()
sfb = torch.tensor([0x38, 0x01, 0xB8, 0x7E, 0x00, 0x80, 0x08, 0x47] * 34, dtype=torch.uint8)[:17 * 16].view(17, 16)
one = lambda t: t.unsqueeze(-1)
new = ops.block_scaled_mm(one(a), one(sfa), one(b), one(sfb), backend="blocks")
old = ops.block_scaled_mm(one(a), one(sfa), one(b), one(sfb), backend="decode")
out["codes"] = [torch.equal(new.isnan(), old.isnan()), torch.equal(new.nan_to_num(), old.nan_to_num()),
                int(new.isnan().sum()), int((new != 0).sum())]
digits = ops.block_scaled_mm(one(a), one(sfa), one(b[:16]), one(sfb[:16]), backend="limbs")
out["codes_limbs"] = [torch.equal(digits.isnan(), old[:, :16].isnan()),
                      torch.equal(digits.nan_to_num(), old[:, :16].nan_to_num()), int(digits.isnan().sum())]

# Views: a batch-first (rows, K/2, L) view with L = 3, B a one-row slice (the GEMV's vector).
g = torch.Generator().manual_seed(5)
a = torch.randint(0, 256, (3, 40, 24), generator=g, dtype=torch.uint8).permute(1, 2, 0)
sfa = torch.randint(0, 0x60, (3, 40, 3), generator=g, dtype=torch.uint8).permute(1, 2, 0)
b = torch.randint(0, 256, (3, 128, 24), generator=g, dtype=torch.uint8).permute(1, 2, 0)[:1]
sfb = torch.randint(0, 0x60, (3, 128, 3), generator=g, dtype=torch.uint8).permute(1, 2, 0)[:1]
new = ops.block_scaled_mm(a, sfa, b, sfb, backend="blocks")
old = ops.block_scaled_mm(a, sfa, b, sfb, backend="decode")
out["views"] = [list(new.shape), new.dtype == torch.float64, torch.equal(new, old)]
b = torch.randint(0, 256, (3, 128, 24), generator=g, dtype=torch.uint8).permute(1, 2, 0)[:8]
sfb = torch.randint(0, 0x60, (3, 128, 3), generator=g, dtype=torch.uint8).permute(1, 2, 0)[:8]
digits = ops.block_scaled_mm(a, sfa, b, sfb, backend="limbs")
out["views_limbs"] = [list(digits.shape), torch.equal(digits, ops.block_scaled_mm(a, sfa, b, sfb, backend="decode"))]

# One rounding in the digits' last kernel: fp16 against round_once of the float64 decode (bf16 rounds the
# float64 result: the interpreter truncates float32 to bf16, so a fused bf16 could not be checked here), on sums
# built to land on fp16 ties, one 2^-20 either side of them (where rounding through float32 first goes wrong),
# past fp16's largest value, in its subnormals, and on random operands with NaN scales.
from reference import formats
def operand(rows, values, scales):  # (rows, K) values and (rows, K/16) scales -> packed (rows, K/2, 1), scales
    codes = formats.encode_e2m1(torch.tensor(values, dtype=torch.float32))
    return one(formats.pack_nibbles(codes)), one(formats.encode_e4m3(torch.tensor(scales, dtype=torch.float32)))
k = 64
rows_a, rows_b = [], []
for sums in ([16, 16, 1, 0], [16, 16, 3, 0], [16, 16, 1, 1], [16, 16, 1, -1], [16, 16, 3, -1], [-16, -16, -1, -1]):
    # block 0: sums[0] + sums[1] under scales 8 x 8 (2048 for 16 + 16); block 1: sums[2]; block 3: 2^-20 steps
    row = [0.0] * k
    row[0], row[1] = 4.0 * (1 if sums[0] > 0 else -1), 4.0 * (1 if sums[1] > 0 else -1)
    row[16] = float(sums[2])
    row[48] = 0.5 * sums[3]
    rows_a.append(row)
scales_a = [[8.0, 1.0, 1.0, 2.0**-9]] * len(rows_a)
b_row = [0.0] * k
b_row[0] = b_row[1] = 4.0
b_row[16], b_row[48] = 1.0, 0.5
rows_b = [b_row] * 8
scales_b = [[8.0, 1.0, 1.0, 2.0**-9]] * 8
ties_a, ties_sfa = operand(6, rows_a, scales_a)
ties_b, ties_sfb = operand(8, rows_b, scales_b)
g = torch.Generator().manual_seed(9)
rand_a = torch.randint(0, 256, (40, 128, 1), generator=g, dtype=torch.uint8)
rand_sfa = torch.randint(0, 0x80, (40, 16, 1), generator=g, dtype=torch.uint8)
rand_sfa[3, 5, 0] = 0x7F  # a NaN scale: its row NaN
rand_b = torch.randint(0, 256, (24, 128, 1), generator=g, dtype=torch.uint8)
rand_sfb = torch.randint(0, 0x80, (24, 16, 1), generator=g, dtype=torch.uint8)
rand_sfb[7, 2, 0] = 0xFF
big = [[6.0] * 16 + [0.0] * 48] * 6, [[448.0, 1.0, 1.0, 1.0]] * 6  # 16 * 36 * 448^2: past fp16's largest
big_a, big_sfa = operand(6, *big)
big_b, big_sfb = operand(8, big[0][:1] * 8, big[1][:1] * 8)
tiny = [[0.5] + [0.0] * 63] * 6, [[2.0**-9, 1.0, 1.0, 1.0]] * 6  # 2^-20: an fp16 subnormal
tiny_a, tiny_sfa = operand(6, *tiny)
tiny_b, tiny_sfb = operand(8, tiny[0][:1] * 8, tiny[1][:1] * 8)
def same(x, y):
    return bool(torch.equal(x.isnan(), y.isnan())) and bool(torch.equal(bits(x.nan_to_num()), bits(y.nan_to_num())))
out["rounded"] = {}
sets = {"ties": (ties_a, ties_sfa, ties_b, ties_sfb), "random": (rand_a, rand_sfa, rand_b, rand_sfb),
        "big": (big_a, big_sfa, big_b, big_sfb), "tiny": (tiny_a, tiny_sfa, tiny_b, tiny_sfb)}
for name, (a, sfa, b, sfb) in sets.items():
    exact = ops.block_scaled_mm(a, sfa, b, sfb, backend="decode")
    for dtype in (torch.float16, torch.bfloat16):
        fused = ops.block_scaled_mm(a, sfa, b, sfb, backend="limbs", rounded=dtype)
        expected = formats.round_once(exact, dtype)
        out["rounded"][f"{name} {dtype}"] = [same(fused, expected), fused.dtype == dtype,
                                            not same(exact.to(dtype), expected)]
out["tie_values"] = ops.block_scaled_mm(ties_a, ties_sfa, ties_b, ties_sfb, backend="decode")[:, 0, 0].tolist()
print(json.dumps(out))
"""


def interpreted_work(name: str, case: dict) -> int:
    """M * max(N, 16) * K * L of the case's products, summed (the interpreter's cost)."""
    if name == "nvfp4_gemv":
        return case["m"] * 16 * case["k"] * case["l"]
    if name == "nvfp4_group_gemm":
        return sum(m * max(n, 16) * k for m, n, k in zip(case["m"], case["n"], case["k"]))
    return case["m"] * max(case["n"], 16) * case["k"] * case.get("l", 1)


def chosen_cases() -> list[tuple[str, dict]]:
    cases = []
    for name in problem_cases.PROBLEMS:
        candidates = [case for _, case in problem_cases.selected_cases(name)] + problem_cases.spec(name)["tests"]
        for case in candidates:
            if interpreted_work(name, case) <= INTERPRETED_WORK and [name, case] not in cases:
                cases.append([name, case])
    return cases


@pytest.fixture(scope="module")
def interpreted() -> dict:
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    cases = chosen_cases()
    planted = [next(c for c in cases if c[0] == name) for name in problem_cases.PROBLEMS]
    run = subprocess.run([sys.executable, "-c", WORKER, str(problem_cases.ROOT), json.dumps([cases, planted])],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_every_small_shape_of_the_four_problems_equals_the_float64_decode(interpreted):
    rows = interpreted["problems"]
    assert {row["name"] for row in rows} == set(problem_cases.PROBLEMS)
    assert len(rows) >= 12  # cpu, ragged and the smaller contest tests, not a token few
    assert [(row["name"], row["case"]) for row in rows if not row["equal"]] == []


def test_every_shape_the_int8_digits_take_equals_the_float64_decode(interpreted):
    rows = interpreted["problems"]
    digit_rows = [row for row in rows if row["limbs"]]
    assert {row["name"] for row in digit_rows} >= {"nvfp4_gemm", "nvfp4_dual_gemm", "nvfp4_group_gemm"}
    assert len(digit_rows) >= 6  # every product of the cpu and contest shapes whose N is a multiple of 8
    assert [(row["name"], row["case"]) for row in rows if not row["chosen_equal"]] == []


def test_a_planted_wrong_output_still_fails_the_check(interpreted):
    checks = [row["checks"] for row in interpreted["problems"] if "checks" in row]
    assert checks == [[True, False]] * len(problem_cases.PROBLEMS)


def test_every_code_and_scale_byte_decodes_as_the_format_defines(interpreted):
    nan_pattern_equal, values_equal, nans, nonzero = interpreted["codes"]
    assert nan_pattern_equal and values_equal
    assert 0 < nans < nonzero  # NaN scales (0x7F, 0xFF) reached the output, and so did real values


def test_every_code_and_scale_byte_through_the_int8_digits(interpreted):
    nan_pattern_equal, values_equal, nans = interpreted["codes_limbs"]
    assert nan_pattern_equal and values_equal and nans > 0


def test_the_digits_round_once_as_round_once_does(interpreted):
    """The digits' last kernel rounds to fp16 as reference/formats.py's round_once, bit for bit (and a bf16
    result, rounded after the product, is round_once's too)."""
    rounded = interpreted["rounded"]
    assert set(rounded) == {f"{name} {dtype}" for name in ("ties", "random", "big", "tiny")
                            for dtype in ("torch.float16", "torch.bfloat16")}
    assert all(same and right_dtype for same, right_dtype, _ in rounded.values()), rounded
    assert rounded["ties torch.float16"][2], "the ties must be where rounding through float32 goes wrong"


def test_the_tie_operands_sum_to_fp16_ties_and_one_step_either_side(interpreted):
    step = 2.0**-20
    assert interpreted["tie_values"] == [2049.0, 2051.0, 2049.0 + step, 2049.0 - step, 2051.0 - step, -2049.0 - step]


def test_strided_batches_and_a_one_row_slice_need_no_copy(interpreted):
    assert interpreted["views"] == [[40, 1, 3], True, True]
    assert interpreted["views_limbs"] == [[40, 8, 3], True]


def largest_scale(log2_max: float) -> float:
    """The largest e4m3 value the task's scale table can draw (the code its last threshold gives)."""
    table = scale_table(log2_max - 1, log2_max, NVFP4.scale_dtype)  # the top of the range decides the top code
    top = table.first_code + sum(t < 2**32 for t in table.thresholds)
    return torch.tensor([top], dtype=torch.uint8).view(NVFP4.scale_dtype).item()


@pytest.mark.parametrize("name", problem_cases.PROBLEMS)
def test_every_shipped_shape_is_inside_the_exactness_bound(name):
    """Inside the bound the kernel and the float64 decode both give the exact sum: equal outputs."""
    spec = problem_cases.spec(name)
    top = largest_scale(float(spec["distribution"]["scale_log2"][1]))
    assert top <= 2.0 ** spec["distribution"]["scale_log2"][1] * 1.125
    for case in spec["tests"] + spec["benchmarks"]:
        for k in case["k"] if isinstance(case["k"], list) else [case["k"]]:
            assert block_kernel.exact_bound(k, top, top) < block_kernel.EXACT_LIMIT / 1000, (name, case)


def test_the_bound_is_where_float64_stops_holding_multiples_of_2_to_the_minus_20():
    assert math.ldexp(1, 33) == block_kernel.EXACT_LIMIT
    step = math.ldexp(1, -20)
    assert (block_kernel.EXACT_LIMIT - step) + step == block_kernel.EXACT_LIMIT  # still exact below
    assert (block_kernel.EXACT_LIMIT + step) - block_kernel.EXACT_LIMIT != step  # rounds at the limit
    # The largest scales (448) on K = 256 stay inside; on K = 16384 they do not.
    assert block_kernel.exact_bound(256, 448.0, 448.0) < block_kernel.EXACT_LIMIT
    assert block_kernel.exact_bound(16384, 448.0, 448.0) > block_kernel.EXACT_LIMIT


def test_the_kernel_rejects_operands_not_contiguous_along_k():
    a = torch.zeros((4, 8, 2), dtype=torch.uint8)
    with pytest.raises(ValueError, match="K-contiguous"):
        block_kernel.block_product(a.transpose(0, 1), torch.zeros((8, 1, 2), dtype=torch.uint8), a, a)
