"""The four problems: input contract, determinism, value distribution, reference, and the checker.

Cases: every ``cpu_tests`` entry of each task.yml, plus the smallest contest test of each problem
(by flops; for the GEMV also the smallest with L > 1). The checker must accept honest float32
kernels and reject kernels that misread the inputs in the ways real kernels do.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import math
import re
import sys
from pathlib import Path

import oracle
import pytest
import torch
import yaml
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ("nvfp4_gemv", "nvfp4_gemm", "nvfp4_dual_gemm", "nvfp4_group_gemm")
FP4 = torch.float4_e2m1fn_x2
E4M3 = torch.float8_e4m3fn
MISMATCH = re.compile(r"(\d+) of (\d+) elements mismatch; worst at \((\d+, )*\d+,?\): got (\S+), expected (\S+)")


@functools.cache
def spec(name: str) -> dict:
    return yaml.safe_load((ROOT / "problems" / name / "task.yml").read_text())


@functools.cache
def problem(name: str):
    return importlib.import_module(f"problems.{name}.reference")


def flops(name: str, case: dict) -> int:
    if name == "nvfp4_gemv":
        return 2 * case["m"] * case["k"] * case["l"]
    if name == "nvfp4_group_gemm":
        return sum(2 * m * n * k for m, n, k in zip(case["m"], case["n"], case["k"]))
    return (4 if name == "nvfp4_dual_gemm" else 2) * case["m"] * case["n"] * case["k"] * case["l"]


# Shapes outside the contest's shape contract (task.yml shape_contract), which the harness's
# CPU checks must not hand to submissions: odd K-block counts, ragged rows, L > 1.
RAGGED = {
    "nvfp4_gemv": [{"m": 40, "k": 64, "l": 1, "seed": 7}, {"m": 130, "k": 192, "l": 3, "seed": 8}],
    "nvfp4_gemm": [{"m": 72, "n": 40, "k": 192, "l": 1, "seed": 7}, {"m": 130, "n": 136, "k": 256, "l": 2, "seed": 8}],
    "nvfp4_dual_gemm": [{"m": 72, "n": 40, "k": 192, "l": 1, "seed": 7},
                        {"m": 130, "n": 136, "k": 256, "l": 2, "seed": 8}],
    "nvfp4_group_gemm": [{"m": [40, 136], "n": [72, 24], "k": [192, 64], "g": 2, "seed": 7}],
}


def selected_cases(name: str) -> list[tuple[str, dict]]:
    contest = sorted(spec(name)["tests"], key=lambda case: flops(name, case))
    chosen = [("cpu", case) for case in spec(name)["cpu_tests"]] + [("ragged", case) for case in RAGGED[name]]
    chosen.append(("contest", contest[0]))
    batched = [case for case in contest if case.get("l", 1) > 1]
    if batched and batched[0] is not contest[0]:
        chosen.append(("contest", batched[0]))
    return chosen


def case_id(name: str, kind: str, case: dict) -> str:
    return f"{name}-{kind}-" + "-".join(str(v).replace(" ", "") for k, v in case.items() if k != "seed")


CASES = [
    pytest.param(name, case, id=case_id(name, kind, case)) for name in PROBLEMS for kind, case in selected_cases(name)
]


def tolerance(name: str) -> tuple[float, float]:
    declared = spec(name)["tolerance"]
    return float(declared["atol"]), float(declared["rtol"])


def bits(t: torch.Tensor) -> torch.Tensor:
    """Reinterpret as same-width integers (works on any strides, NaN compares by bit pattern)."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def tensors_of(tree) -> list[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in tensors_of(item)]
    return []


def as_list(output) -> list[torch.Tensor]:
    return output if isinstance(output, list) else [output]


# --- the pieces of each problem's data tuple ---------------------------------------------------


def operands(name: str, data) -> list[tuple[list[tuple], torch.Tensor]]:
    """Per output: ([(data, scales, permuted), ...] operands, c); A first, then B (B1, B2)."""
    if name == "nvfp4_group_gemm":
        abc, scales, permuted, _ = data
        return [([(a, sfa, pa), (b, sfb, pb)], c) for (a, b, c), (sfa, sfb), (pa, pb) in zip(abc, scales, permuted)]
    if name == "nvfp4_dual_gemm":
        a, b1, b2, sfa, sfb1, sfb2, pa, pb1, pb2, c = data
        return [([(a, sfa, pa), (b1, sfb1, pb1), (b2, sfb2, pb2)], c)]
    a, b, sfa, sfb, pa, pb, c = data
    return [([(a, sfa, pa), (b, sfb, pb)], c)]


def expected_shapes(name: str, case: dict) -> list[tuple[list[int], int, int, int]]:
    """Per output: (rows of each operand, K, L, columns of C)."""
    if name == "nvfp4_group_gemm":
        return [([m, n], k, 1, n) for m, n, k in zip(case["m"], case["n"], case["k"])]
    m, k, l = case["m"], case["k"], case["l"]
    if name == "nvfp4_gemv":
        return [([m, 128], k, l, 1)]
    n = case["n"]
    return [([m, n, n] if name == "nvfp4_dual_gemm" else [m, n], k, l, n)]


# --- input contract ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "case"), CASES)
def test_generate_input_contract(name, case):
    data = problem(name).generate_input(**case)
    assert isinstance(data, tuple)
    if name == "nvfp4_group_gemm":
        g = case["g"]
        assert len(data) == 4 and all(isinstance(part, list) and len(part) == g for part in data)
        abc, scales, permuted, sizes = data
        assert all(isinstance(t, tuple) and len(t) == 3 for t in abc)
        assert all(isinstance(t, tuple) and len(t) == 2 for t in scales + permuted)
        assert sizes == [(m, n, k, 1) for m, n, k in zip(case["m"], case["n"], case["k"])]
        assert all(type(v) is int for size in sizes for v in size)
    else:
        assert len(data) == (10 if name == "nvfp4_dual_gemm" else 7)
    for (ops, c), (rows_list, k, l, cols) in zip(operands(name, data), expected_shapes(name, case)):
        assert len(ops) == len(rows_list)
        for (packed, sf, perm), rows in zip(ops, rows_list):
            # (rows, K/2, L) fp4x2 viewing (L, rows, K/2) storage; scales likewise.
            assert packed.dtype == FP4 and packed.shape == (rows, k // 2, l)
            assert packed.stride() == (k // 2, 1, rows * k // 2)
            assert sf.dtype == E4M3 and sf.shape == (rows, k // 16, l)
            assert sf.stride() == (k // 16, 1, rows * k // 16)
            # Permuted scales: the index formula, zero padding, and the contest's memory order.
            assert perm.dtype == E4M3 and tuple(perm.shape) == oracle.permuted_shape(rows, k // 16, l)
            perm_bytes = bits(perm)
            assert torch.equal(oracle.plain_from_permuted(perm_bytes, rows, k // 16), bits(sf))
            assert int(perm_bytes.ne(0).sum()) == int(bits(sf).ne(0).sum())
            rest_mn, rest_k = perm.shape[2], perm.shape[4]
            assert perm.stride() == (16, 4, rest_k * 512, 1, 512, rest_mn * rest_k * 512)
            for batch in range(l):
                in_memory = perm_bytes.permute(5, 2, 4, 0, 1, 3)[batch].reshape(-1)
                assert torch.equal(in_memory, oracle.blocked_from_plain(bits(sf)[:, :, batch]))
        assert c.dtype == torch.float16 and c.shape == (rows_list[0], cols, l)
        assert c.stride() == (cols, 1, rows_list[0] * cols)
        assert c.isnan().all(), "c is poisoned with NaN so unwritten elements show"
    assert all(t.device.type == "cpu" for t in tensors_of(data))


@pytest.mark.parametrize(("name", "case"), CASES)
def test_same_seed_same_bytes_other_seed_other_bytes(name, case):
    first = tensors_of(problem(name).generate_input(**case))
    again = tensors_of(problem(name).generate_input(**case))
    other = tensors_of(problem(name).generate_input(**{**case, "seed": case["seed"] + 1}))
    assert len(first) == len(again) == len(other)
    for x, y in zip(first, again):
        assert x.shape == y.shape and x.stride() == y.stride() and torch.equal(bits(x), bits(y))
    inputs = [(x, y) for x, y in zip(first, other) if x.dtype in (FP4, E4M3)]
    assert inputs and all(not torch.equal(bits(x), bits(y)) for x, y in inputs)


@pytest.mark.parametrize(("name", "case"), CASES)
def test_value_distribution(name, case):
    """All 16 codes in both nibbles of every operand; scales span the declared log2 range."""
    data = problem(name).generate_input(**case)
    log2_min, log2_max = map(float, spec(name)["distribution"]["scale_log2"])
    scale_bytes = []
    for ops, _ in operands(name, data):
        for packed, sf, _ in ops:
            raw = bits(packed)
            assert set((raw & 0x0F).unique().tolist()) == set(range(16)), "low nibbles"
            assert set((raw >> 4).unique().tolist()) == set(range(16)), "high nibbles"
            scale_bytes.extend(bits(sf).reshape(-1).tolist())
    values = [oracle.E4M3_TABLE[b] for b in scale_bytes]
    assert all(v > 0 for v in values), "no zero, negative or NaN scales"
    assert min(values) >= 2.0**log2_min * (1 - 2**-4) and max(values) <= 2.0**log2_max * (1 + 2**-4)
    assert min(values) <= 2.0 ** (log2_min + 0.5) and max(values) >= 2.0 ** (log2_max - 0.5)
    filled = {math.floor(math.log2(v)) for v in values}
    assert set(range(int(log2_min), int(log2_max))) <= filled, "every binade of the range"
    if log2_min < -6:
        assert any(oracle.e4m3_is_subnormal(b) for b in scale_bytes), "e4m3 subnormal scales"


class CpuTensorLog(TorchDispatchMode):
    """Records the size of every tensor an operation produces on the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        produced = out if isinstance(out, (list, tuple)) else [out]
        self.sizes += [t.numel() for t in produced if isinstance(t, torch.Tensor) and t.device.type == "cpu"]
        return out


@pytest.mark.parametrize(("name", "case"), CASES)
def test_inputs_are_generated_on_the_target_device(name, case):
    """No host draw and copy: on another device (meta here) the CPU only builds the key table."""
    problem(name).generate_input(**case, device="meta")  # builds the cached scale lookup once
    log = CpuTensorLog()
    with log:
        data = problem(name).generate_input(**{**case, "seed": case["seed"] + 1}, device="meta")
    assert all(t.device.type == "meta" for t in tensors_of(data))
    streams = 2 * sum(len(ops) for ops, _ in operands(name, data))
    assert log.sizes and max(log.sizes) <= 3 * streams, log.sizes  # (start, k0, k1) per stream


def test_an_operands_bits_ignore_the_other_operands_shapes():
    narrow = problem("nvfp4_gemm").generate_input(m=40, n=24, k=64, l=1, seed=3)
    wide = problem("nvfp4_gemm").generate_input(m=40, n=136, k=64, l=1, seed=3)
    for index in (0, 2, 4):  # a, sfa, sfa_permuted
        assert torch.equal(bits(narrow[index]), bits(wide[index]))
    group = problem("nvfp4_group_gemm").generate_input(m=[40, 8], n=[24, 16], k=[64, 32], g=2, seed=3)
    other = problem("nvfp4_group_gemm").generate_input(m=[40, 72], n=[24, 8], k=[64, 96], g=2, seed=3)
    for first, second in zip(tensors_of(group[:3]), tensors_of(other[:3])):
        if first.shape == second.shape:  # group 0's tensors (c aside, all of group 1 changed shape)
            assert torch.equal(bits(first), bits(second))
    assert torch.equal(bits(group[0][0][0]), bits(other[0][0][0]))


# --- reference against the oracle -------------------------------------------------------------


@pytest.mark.parametrize(("name", "case"), CASES)
def test_ref_kernel_matches_float64_oracle(name, case):
    data = problem(name).generate_input(**case)
    got = as_list(problem(name).ref_kernel(data))
    expected = as_list(oracle.PROBLEM_ORACLES[name](data))
    atol, rtol = tolerance(name)
    assert len(got) == len(expected)
    for one_got, one_expected in zip(got, expected):
        assert one_got.dtype == torch.float16 and one_got.shape == one_expected.shape
        assert one_expected.isfinite().all(), "the distribution keeps outputs inside fp16"
        error = (one_got.double() - one_expected.double()).abs()
        assert (error <= atol + rtol * one_expected.double().abs()).all()
        # Both are float64 sums rounded to fp16; the reference rounds through float32, so a
        # rare element may sit one fp16 ulp away from the correctly rounded one.
        ulp = torch.finfo(torch.float16).eps * one_expected.double().abs().clamp_min(2.0**-14)
        assert (error <= ulp).all()
        assert torch.equal(one_got, one_expected) or float((one_got != one_expected).double().mean()) < 1e-3


# --- the checker ------------------------------------------------------------------------------


def load_submission(name: str, path: Path, monkeypatch):
    """Import a submission as the evaluator does: ``task`` resolves to the problem's task.py."""
    monkeypatch.setitem(sys.modules, "task", importlib.import_module(f"problems.{name}.task"))
    module_spec = importlib.util.spec_from_file_location(f"submission_{name}_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def margin(name: str, output, expected) -> float:
    """Worst |got - expected| / (atol + rtol |expected|): below 1 passes."""
    atol, rtol = tolerance(name)
    worst = 0.0
    for got, exp in zip(as_list(output), as_list(expected)):
        exp64 = exp.double()
        ratio = (got.double() - exp64).abs() / (atol + rtol * exp64.abs())
        worst = max(worst, float(ratio.max()))
    return worst


@pytest.mark.parametrize(("name", "case"), CASES)
def test_torch_reference_submission_passes(name, case, monkeypatch):
    submission = load_submission(name, ROOT / "submissions" / name / "torch_reference.py", monkeypatch)
    data = problem(name).generate_input(**case)
    output = submission.custom_kernel(data)
    ok, message = problem(name).check_implementation(data, output)
    assert ok, message
    assert "within" in message


# A kernel that decodes the contest tuple itself: e2m1 codes through the oracle's table, scales
# from the *permuted* tensor (as a CuTe kernel would), float32 matmuls, fp16 out. With no
# mutation it passes; each mutation is one realistic misreading of the inputs, applied to
# operand A only, to the B operand(s) only, or to every operand.
#
# Not listed: nibble order swapped in *every* operand. Both sides of each product then move
# together (elements 2i and 2i+1 share a block and a scale), so the dot products are the same
# sums in another order: a correct result that no checker can or should reject
# (test_consistent_nibble_swap_is_harmless pins this down).
MUTATIONS = (
    ("nibble_order", "A"),  # element 2i read from the high nibble
    ("nibble_order", "B"),
    ("sign_dropped", "all"),  # e2m1 sign bit ignored
    ("sign_dropped", "A"),
    ("subnormal_scale_flush", "all"),  # e4m3 scales with exponent field 0 read as 0
    ("subnormal_scale_flush", "A"),
    ("scale_layout_transposed", "all"),  # a 128-row tile's (32, 4) row split read as (4, 32)
    ("code_table_off_by_one", "all"),  # magnitude table indexed one too high (0 -> 0.5, ..., 6 -> 6)
)


def decode(packed: torch.Tensor, perm: torch.Tensor, mutation: str | None) -> torch.Tensor:
    """(rows, K/2, L) fp4x2 + permuted scales -> (L, rows, K) float32 values."""
    raw = bits(packed).to(torch.int64)
    low, high = raw & 0x0F, raw >> 4
    if mutation == "nibble_order":
        low, high = high, low
    codes = torch.stack((low, high), dim=2).flatten(1, 2)  # (rows, K, L)
    table = list(oracle.E2M1_TABLE)
    if mutation == "sign_dropped":
        table = [abs(v) for v in table]
    if mutation == "code_table_off_by_one":
        table = [math.copysign(oracle.E2M1_TABLE[min((c & 7) + 1, 7)], oracle.E2M1_TABLE[c]) for c in range(16)]
    values = torch.tensor(table, dtype=torch.float32)[codes]
    rows, k = codes.shape[0], codes.shape[1]
    r = torch.arange(rows).view(rows, 1)
    c = torch.arange(k // 16).view(1, -1)
    if mutation == "scale_layout_transposed":
        row32, row4 = (r % 128) // 4, r % 4
    else:
        row32, row4 = r % 32, (r % 128) // 32
    scale_bytes = bits(perm)[row32, row4, r // 128, c % 4, c // 4].to(torch.int64)  # (rows, K/16, L)
    scale_table = list(oracle.E4M3_TABLE)
    if mutation == "subnormal_scale_flush":
        scale_table = [0.0 if oracle.e4m3_is_subnormal(b) else v for b, v in enumerate(scale_table)]
    scales = torch.tensor(scale_table, dtype=torch.float32)[scale_bytes].repeat_interleave(16, dim=1)
    return (values * scales).permute(2, 0, 1)


def float32_kernel(
    name: str,
    data,
    mutation: str | None = None,
    target: str = "all",
    blockwise: bool = False,
    out_dtype: torch.dtype = torch.float16,
):
    """The problem's output from float32 arithmetic, ``mutation`` applied to ``target`` operands.

    ``blockwise`` accumulates one 16-element block at a time, sequentially along K, as an
    FP4 tensor-core kernel does, instead of torch.matmul's blocked summation.
    """

    def product(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if not blockwise:
            return torch.matmul(x, y.transpose(1, 2))
        # One 16-term dot product per block, then the blocks added one by one in float32.
        partial = torch.matmul(x.unflatten(2, (-1, 16)).transpose(1, 2), y.unflatten(2, (-1, 16)).permute(0, 2, 3, 1))
        acc = torch.zeros(partial[:, 0].shape, dtype=torch.float32)
        for block in range(partial.shape[1]):
            acc += partial[:, block]
        return acc

    outputs = []
    for ops, _ in operands(name, data):
        hit = {"all": range(len(ops)), "A": [0], "B": range(1, len(ops))}[target]
        decoded = [decode(packed, perm, mutation if i in hit else None) for i, (packed, _, perm) in enumerate(ops)]
        if name == "nvfp4_gemv":
            decoded[1] = decoded[1][:, :1]
        if name == "nvfp4_dual_gemm":
            result = torch.nn.functional.silu(product(decoded[0], decoded[1])) * product(decoded[0], decoded[2])
        else:
            result = product(decoded[0], decoded[1])
        outputs.append(result.permute(1, 2, 0).to(out_dtype))
    return outputs if name == "nvfp4_group_gemm" else outputs[0]


@pytest.mark.parametrize(("name", "case"), CASES)
def test_float32_kernels_pass(name, case):
    data = problem(name).generate_input(**case)
    for blockwise in (False, True):
        ok, message = problem(name).check_implementation(data, float32_kernel(name, data, blockwise=blockwise))
        assert ok, message


@pytest.mark.parametrize(("mutation", "target"), MUTATIONS, ids=[f"{m}-{t}" for m, t in MUTATIONS])
@pytest.mark.parametrize(("name", "case"), CASES)
def test_checker_rejects_misread_inputs(name, case, mutation, target):
    data = problem(name).generate_input(**case)
    mutant = float32_kernel(name, data, mutation, target)
    honest = float32_kernel(name, data)
    assert any(not torch.equal(x, y) for x, y in zip(as_list(mutant), as_list(honest))), "mutation changed nothing"
    ok, message = problem(name).check_implementation(data, mutant)
    assert not ok, f"{mutation} on {target} was not caught: {message}"
    found = MISMATCH.search(message)
    assert found, message
    assert int(found.group(1)) > 0


@pytest.mark.parametrize(("name", "case"), CASES)
def test_consistent_nibble_swap_is_harmless(name, case):
    data = problem(name).generate_input(**case)
    ok, message = problem(name).check_implementation(data, float32_kernel(name, data, "nibble_order", "all"))
    assert ok, message


def bad_outputs(name: str, expected):
    """(label, output, words the message must contain) for malformed outputs."""
    if name == "nvfp4_group_gemm":
        g = len(expected)
        return [
            ("short list", expected[:-1], [f"list of {g}", str(g - 1)]),
            ("long list", [*expected, expected[0]], [f"list of {g}", str(g + 1)]),
            ("tensor for list", expected[0], [f"list of {g}", "tensor"]),
            ("None", None, [f"list of {g}", "NoneType"]),
            ("None element", [None, *expected[1:]], ["output[0]", "expected a tensor"]),
            ("wrong shape element", [expected[0][:-1], *expected[1:]], ["output[0]", "shape"]),
            ("wrong dtype element", [expected[0].float(), *expected[1:]], ["output[0]", "dtype"]),
            ("NaN (unwritten)", [torch.full_like(t, math.nan) for t in expected], ["mismatch"]),
        ]
    return [
        ("wrong shape", expected[:-1], ["shape", str(tuple(expected.shape))]),
        ("flattened", expected.reshape(-1), ["shape"]),
        ("wrong dtype", expected.float(), ["dtype", "float16"]),
        ("bfloat16", expected.to(torch.bfloat16), ["dtype"]),
        ("None", None, ["expected a tensor", "NoneType"]),
        ("list", [expected], ["expected a tensor", "list"]),
        ("float", 1.0, ["expected a tensor", "float"]),
        ("NaN (unwritten)", torch.full_like(expected, math.nan), ["mismatch", "got nan"]),
    ]


@pytest.mark.parametrize("name", PROBLEMS)
def test_checker_rejects_malformed_outputs_with_a_message(name):
    case = spec(name)["cpu_tests"][0]
    data = problem(name).generate_input(**case)
    expected = problem(name).ref_kernel(data)
    ok, message = problem(name).check_implementation(data, expected)
    assert ok, message
    for label, output, words in bad_outputs(name, expected):
        result = problem(name).check_implementation(data, output)  # must not raise
        assert isinstance(result, tuple) and result[0] is False, label
        assert isinstance(result[1], str) and all(word in result[1] for word in words), (label, result[1])


@pytest.mark.parametrize("name", PROBLEMS)
@pytest.mark.parametrize("bad_value", [1.0, math.inf, -math.inf], ids=["one-off", "inf", "-inf"])
def test_checker_names_a_single_bad_element(name, bad_value):
    case = spec(name)["cpu_tests"][0]
    data = problem(name).generate_input(**case)
    expected = as_list(problem(name).ref_kernel(data))
    wrong = [t.clone() for t in expected]
    wrong[-1].view(-1)[5] += bad_value
    output = wrong if name == "nvfp4_group_gemm" else wrong[0]
    ok, message = problem(name).check_implementation(data, output)
    found = MISMATCH.search(message)
    assert not ok and found and found.group(1) == "1", message
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(5), wrong[-1].shape))
    assert f"worst at {index}" in message
    if name == "nvfp4_group_gemm":
        assert message.startswith(f"output[{len(expected) - 1}]")


# --- tolerance sanity -------------------------------------------------------------------------


# Deep-K cases: the benchmarks' deepest K (16384), on few rows so the float64 oracle stays quick.
DEEP_K_CASES = {
    "nvfp4_gemv": {"m": 128, "k": 16384, "l": 1, "seed": 21},
    "nvfp4_gemm": {"m": 128, "n": 128, "k": 16384, "l": 1, "seed": 22},
    "nvfp4_dual_gemm": {"m": 128, "n": 128, "k": 16384, "l": 1, "seed": 23},
    "nvfp4_group_gemm": {"m": [64, 128], "n": [128, 64], "k": [16384, 7168], "g": 2, "seed": 24},
}


# Honest float32 kernels against the float64 reference: worst |error| / (atol + rtol |expected|)
# over the cases above plus a deep-K case per problem (measured on this CPU build; 1 = edge):
#
#                     accumulation (fp32 result vs exact,      checker's view (fp16 output vs
#                     before fp16 rounding), matmul / blocks   fp16 reference), matmul / blocks
#   gemv              0.003 / 0.002                            0    / 0
#   gemm              0.004 / 0.005                            0.84 / 0.69
#   dual_gemm         0.014 / 0.050                            0.65 / 0.54
#   group_gemm        0.003 / 0.006                            0.52 / 0.65
#
# fp32 accumulation uses at most ~5% of the tolerance (the dual GEMM at K=16384, where silu(g)*u
# multiplies two accumulated sums). The checker's figure is fp16 output rounding, not arithmetic:
# when the exact value sits near an fp16 rounding midpoint, float32 and float64 round to
# neighbouring fp16 values, and one fp16 ulp is up to 2^-10 = 0.098% of the value -- just inside
# rtol = 0.1%. One ulp always passes, so honest fp32 math is safe; an output two ulps off fails.
ACCUMULATION_MARGIN_LIMIT = 0.2


@pytest.mark.parametrize("name", PROBLEMS)
def test_tolerance_is_not_tighter_than_float32_math(name):
    cases = [case for _, case in selected_cases(name)] + [DEEP_K_CASES[name]]
    accumulation, checker = {}, {}
    for case in cases:
        data = problem(name).generate_input(**case)
        exact = oracle.PROBLEM_ORACLES[name](data, rounded=False)
        reference = problem(name).ref_kernel(data)
        for blockwise in (False, True):
            label = "block-sequential" if blockwise else "matmul"
            raw = float32_kernel(name, data, blockwise=blockwise, out_dtype=torch.float32)
            rounded = [t.to(torch.float16) for t in as_list(raw)]
            accumulation[label] = max(accumulation.get(label, 0.0), margin(name, raw, exact))
            checker[label] = max(checker.get(label, 0.0), margin(name, rounded, reference))
    print(f"{name}: worst float32 margin, accumulation {accumulation}, checker {checker}")
    declared = problem(name).TOLERANCE
    assert (declared.atol, declared.rtol) == tolerance(name), "the checker uses task.yml's tolerance"
    assert max(accumulation.values()) < ACCUMULATION_MARGIN_LIMIT, accumulation
    assert max(checker.values()) < 1.0, checker
