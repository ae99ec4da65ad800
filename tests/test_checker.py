"""The checker: it accepts honest float32 kernels (matmul and block-sequential), rejects kernels
that misread the inputs in the ways real kernels do and malformed outputs, each with a message;
and the tolerance is not tighter than float32 arithmetic."""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from pathlib import Path

import oracle
import pytest
import torch
from problem_cases import (
    CASES,
    MISMATCH,
    PROBLEMS,
    ROOT,
    as_list,
    bits,
    operands,
    problem,
    selected_cases,
    spec,
    tolerance,
)

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
