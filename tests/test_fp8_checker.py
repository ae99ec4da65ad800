"""The fp8 problems' checker: honest kernels pass (float32 matmul, block by block, and a model of
Hopper's reduced-precision fp8 accumulation), kernels that misread the data tuple fail, malformed
outputs fail with a message; and the declared tolerance is not tighter than that arithmetic.
The torch baselines under submissions/ pass every case."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import oracle_fp8
import pytest
import torch
from problem_cases import FP8_CASES, FP8_PROBLEMS, MISMATCH, ROOT, problem, selected_cases, spec, tolerance

from reference.formats import decode_e4m3, decode_e8m0

HOPPER_FRACTION_BITS = 13
"""DeepSeek-V3 (section 3.3.2): Hopper's fp8 tensor cores keep about 14 bits while accumulating."""


# --- what a kernel computes -------------------------------------------------------------------


def operand_parts(name: str, data, mutation: str | None = None, target: str = "all"):
    """(A codes, B codes, A scales per element block, B scales per element block, K block) as float32,
    with ``mutation`` (one realistic misreading of the tuple) applied to ``target`` operands."""
    hit_a, hit_b = target in ("all", "A"), target in ("all", "B")
    if name == "mxfp8_gemm":
        a, b, sfa, sfb, sfa_blocked, _, _ = data
        m, k = a.shape
        sa, sb = decode_e8m0(sfa), decode_e8m0(sfb)
        if mutation == "e8m0_bias_128" and hit_a:
            sa = sa / 2
        if mutation == "blocked_read_as_plain" and hit_a:
            sa = decode_e8m0(sfa_blocked[: m * (k // 32)].view(m, k // 32))
        sa, sb = sa.repeat_interleave(32, 1), sb.repeat_interleave(32, 1)
        block = 32
    else:
        a, b, sa_m_major, sb_blocks, _ = data
        m, k = a.shape
        n = b.shape[0]
        sa = sa_m_major
        if mutation == "a_scales_read_row_major" and hit_a:
            sa = sa_m_major.t().contiguous().view(m, k // 128)
        if mutation == "a_scales_ignored" and hit_a:
            sa = torch.ones_like(sa)
        rows = torch.arange(n) // 128
        if mutation == "b_scale_rows_shifted" and hit_b:
            rows = (rows + 1) % sb_blocks.shape[0]
        sa, sb = sa.repeat_interleave(128, 1), sb_blocks[rows].repeat_interleave(128, 1)
        block = 128
    a_codes, b_codes = decode_e4m3(a), decode_e4m3(b)
    if mutation == "sign_dropped":
        a_codes, b_codes = (a_codes.abs() if hit_a else a_codes), (b_codes.abs() if hit_b else b_codes)
    if mutation == "e4m3_read_as_e5m2" and hit_a:
        a_codes = a.view(torch.float8_e5m2).to(torch.float32).nan_to_num(0.0, 0.0, 0.0)
    return a_codes, b_codes, sa.float(), sb.float(), block


def _truncated_sum(acc: torch.Tensor, terms: torch.Tensor) -> torch.Tensor:
    """acc + sum(terms) with every addend cut to HOPPER_FRACTION_BITS bits below the largest one's
    leading bit (aligned, truncated toward zero): a pessimistic model of one fp8 wgmma step."""
    addends = torch.cat([acc.unsqueeze(-1), terms], -1).double()
    top = addends.abs().amax(-1, keepdim=True).clamp_min(2.0**-200)
    unit = torch.exp2(torch.floor(torch.log2(top)) - HOPPER_FRACTION_BITS)
    return (torch.trunc(addends / unit) * unit).sum(-1).float()


def honest_kernel(name: str, data, how: str = "matmul", mutation=None, target="all", out_dtype=torch.bfloat16):
    """The output from float32 arithmetic: one matmul of scaled values ("matmul"), or scale block by
    scale block with the raw e4m3 dot in float32 ("blocks") or truncated like Hopper's ("hopper")."""
    a, b, sa, sb, block = operand_parts(name, data, mutation, target)
    if how == "matmul":
        return ((a * sa) @ (b * sb).T).to(out_dtype)
    acc = torch.zeros(a.shape[0], b.shape[0])
    for start in range(0, a.shape[1], block):
        part = torch.zeros_like(acc)
        for chunk in range(start, start + block, 32):  # one 32-deep fp8 MMA step at a time
            cut = slice(chunk, chunk + 32)
            if how == "hopper":
                part = _truncated_sum(part, a[:, None, cut] * b[None, :, cut])
            else:
                part = part + a[:, cut] @ b[:, cut].T
        acc += part * sa[:, start, None] * sb[None, :, start]
    return acc.to(out_dtype)


@pytest.mark.parametrize(("name", "case"), FP8_CASES)
@pytest.mark.parametrize("how", ["matmul", "blocks", "hopper"])
def test_honest_kernels_pass(name, case, how):
    data = problem(name).generate_input(**case)
    ok, message = problem(name).check_implementation(data, honest_kernel(name, data, how))
    assert ok, message


MUTATIONS = {
    "mxfp8_gemm": [("e8m0_bias_128", "A"), ("blocked_read_as_plain", "A"), ("sign_dropped", "B"),
                   ("sign_dropped", "all"), ("e4m3_read_as_e5m2", "A")],
    "fp8_blockwise_gemm": [("a_scales_read_row_major", "A"), ("a_scales_ignored", "A"),
                           ("b_scale_rows_shifted", "B"), ("sign_dropped", "all"), ("e4m3_read_as_e5m2", "A")],
}
MUTATION_CASES = [
    pytest.param(name, case, mutation, target, id=f"{param.id}-{mutation}-{target}")
    for param in FP8_CASES
    for name, case in [param.values]
    for mutation, target in MUTATIONS[name]
]


@pytest.mark.parametrize(("name", "case", "mutation", "target"), MUTATION_CASES)
def test_checker_rejects_misread_inputs(name, case, mutation, target):
    data = problem(name).generate_input(**case)
    mutant = honest_kernel(name, data, mutation=mutation, target=target)
    assert not torch.equal(mutant, honest_kernel(name, data)), "the mutation changed nothing"
    ok, message = problem(name).check_implementation(data, mutant)
    assert not ok, f"{mutation} on {target} was not caught: {message}"
    found = MISMATCH.search(message)
    assert found and int(found.group(1)) > 0, message


@pytest.mark.parametrize("name", FP8_PROBLEMS)
def test_checker_rejects_malformed_outputs_with_a_message(name):
    data = problem(name).generate_input(**spec(name)["cpu_tests"][0])
    expected = problem(name).ref_kernel(data)
    assert problem(name).check_implementation(data, expected)[0]
    for label, output, words in [
        ("fp16", expected.to(torch.float16), ["dtype", "bfloat16"]),
        ("float32", expected.float(), ["dtype"]),
        ("transposed", expected.t().contiguous(), ["shape"]),
        ("None", None, ["expected a tensor", "NoneType"]),
        ("NaN (unwritten c)", data[-1], ["mismatch", "got nan"]),
    ]:
        ok, message = problem(name).check_implementation(data, output)
        assert not ok and all(word in message for word in words), (label, message)


# --- tolerance sanity -------------------------------------------------------------------------

# The benchmarks' deepest K (16384) on few rows, so the float64 oracle and the Hopper model stay quick.
DEEP_K = {"mxfp8_gemm": {"m": 128, "n": 128, "k": 16384, "seed": 22},
          "fp8_blockwise_gemm": {"m": 64, "n": 64, "k": 16384, "seed": 23}}


def margin(name: str, output: torch.Tensor, expected: torch.Tensor) -> float:
    """Worst |got - expected| / (atol + rtol |expected|): below 1 passes."""
    atol, rtol = tolerance(name)
    exp64 = expected.double()
    return float(((output.double() - exp64).abs() / (atol + rtol * exp64.abs())).max())


# Measured on this CPU build (worst over the cases below; 1 = the edge):
#
#                     accumulation (fp32 result vs exact)    checker's view (bf16 vs bf16 reference)
#                     matmul / blocks / hopper model          matmul / blocks / hopper model
#   mxfp8_gemm        0.0002 / 0.0005 / 0.21                  0.09 / 0.29 / 0.36
#   fp8_blockwise     0.0002 / 0.0002 / 0.37                  0.18 / 0.11 / 0.36
#
# float32 arithmetic uses almost nothing: the checker's figure is the bf16 rounding of the output
# (one bf16 ulp is up to 2^-7 = 0.78% of the value, against rtol = 2%). The Hopper model truncates
# every addend of each 32-deep step to 13 bits below the largest: at K = 16384 its error reaches
# ~0.4 of the allowance on outputs near zero, which atol = 1 admits (docs/numerics.md).
ACCUMULATION_MARGIN_LIMIT = {"matmul": 0.05, "blocks": 0.05, "hopper": 0.6}


@pytest.mark.parametrize("name", FP8_PROBLEMS)
def test_tolerance_is_not_tighter_than_float32_or_hopper_math(name):
    cases = [case for _, case in selected_cases(name)] + [DEEP_K[name]]
    accumulation: dict[str, float] = {}
    checker: dict[str, float] = {}
    for case in cases:
        data = problem(name).generate_input(**case)
        exact = oracle_fp8.PROBLEM_ORACLES[name](data, rounded=False)
        reference = problem(name).ref_kernel(data)
        for how in ("matmul", "blocks", "hopper"):
            raw = honest_kernel(name, data, how, out_dtype=torch.float32)
            accumulation[how] = max(accumulation.get(how, 0.0), margin(name, raw, exact))
            checker[how] = max(checker.get(how, 0.0), margin(name, raw.to(torch.bfloat16), reference))
    print(f"{name}: worst margin, accumulation {accumulation}, checker {checker}")
    declared = problem(name).TOLERANCE
    assert (declared.atol, declared.rtol) == tolerance(name), "the checker uses task.yml's tolerance"
    assert all(accumulation[how] < limit for how, limit in ACCUMULATION_MARGIN_LIMIT.items()), accumulation
    assert max(checker.values()) < 1.0, checker
    assert declared.rtol > 2.0**-7, "one bf16 ulp always passes"


# --- the torch baselines ----------------------------------------------------------------------


def load_submission(name: str, file: str, monkeypatch):
    """Import a submission as the evaluator does: ``task`` resolves to the problem's task.py."""
    monkeypatch.setitem(sys.modules, "task", importlib.import_module(f"problems.{name}.task"))
    path = ROOT / "submissions" / name / file
    module_spec = importlib.util.spec_from_file_location(f"submission_{name}_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("name", "case"), FP8_CASES)
def test_torch_reference_submission_passes(name, case, monkeypatch):
    submission = load_submission(name, "torch_reference.py", monkeypatch)
    data = problem(name).generate_input(**case)
    ok, message = problem(name).check_implementation(data, submission.custom_kernel(data))
    assert ok and "within" in message, message
