"""The fp8 problems' inputs and reference (mxfp8_gemm, fp8_blockwise_gemm): input contract,
determinism, value distribution, the device the inputs are made on, and the reference against
the float64 oracle of tests/oracle_fp8.py.

Cases: tests/problem_cases.py (every ``cpu_tests`` entry, ragged shapes, the smallest contest test).
"""

from __future__ import annotations

import math

import oracle
import oracle_fp8
import pytest
import torch
from problem_cases import FP8_CASES, CpuTensorLog, bits, problem, spec, tensors_of, tolerance

E4M3 = torch.float8_e4m3fn
E8M0 = torch.float8_e8m0fnu
NAN_FREE_E4M3 = [b for b in range(256) if not math.isnan(oracle.E4M3_TABLE[b])]


def blocked_len(rows: int, cols: int) -> int:
    return oracle.blocked_size(rows, cols)


def check_operand(data: torch.Tensor, rows: int, k: int) -> None:
    assert data.dtype == E4M3 and data.shape == (rows, k) and data.stride() == (k, 1)


@pytest.mark.parametrize(("name", "case"), FP8_CASES)
def test_generate_input_contract(name, case):
    data = problem(name).generate_input(**case)
    m, n, k = case["m"], case["n"], case["k"]
    assert isinstance(data, tuple)
    if name == "mxfp8_gemm":
        a, b, sfa, sfb, sfa_blocked, sfb_blocked, c = data
        for sf, rows, blocked in ((sfa, m, sfa_blocked), (sfb, n, sfb_blocked)):
            assert sf.dtype == E8M0 and sf.shape == (rows, k // 32) and sf.stride() == (k // 32, 1)
            # The blocked layout by the oracle's formula, zero padded (NVFP4's layout, e8m0 bytes).
            assert blocked.dtype == E8M0 and blocked.shape == (blocked_len(rows, k // 32),)
            assert torch.equal(bits(blocked), oracle.blocked_from_plain(bits(sf)))
    else:
        a, b, sa, sb, c = data
        # A's scales M-major (what torch._scaled_mm and DeepGEMM take), B's row-major.
        assert sa.dtype == torch.float32 and sa.shape == (m, k // 128) and sa.stride() == (1, m)
        assert sb.dtype == torch.float32 and sb.shape == (-(-n // 128), k // 128) and sb.is_contiguous()
    check_operand(a, m, k)
    check_operand(b, n, k)
    assert c.dtype == torch.bfloat16 and c.shape == (m, n) and c.stride() == (n, 1)
    assert c.isnan().all(), "c is poisoned with NaN so unwritten elements show"
    assert all(t.device.type == "cpu" for t in tensors_of(data))


@pytest.mark.parametrize(("name", "case"), FP8_CASES)
def test_same_seed_same_bits_other_seed_other_bits(name, case):
    first = tensors_of(problem(name).generate_input(**case))
    again = tensors_of(problem(name).generate_input(**case))
    other = tensors_of(problem(name).generate_input(**{**case, "seed": case["seed"] + 1}))
    for x, y in zip(first, again, strict=True):
        assert x.shape == y.shape and x.stride() == y.stride() and torch.equal(bits(x), bits(y))
    inputs = [(x, y) for x, y in zip(first, other) if x.dtype != torch.bfloat16]
    assert inputs and all(not torch.equal(bits(x), bits(y)) for x, y in inputs)


def scale_values(name: str, data) -> list[float]:
    if name == "mxfp8_gemm":
        return [oracle_fp8.E8M0_TABLE[b] for sf in data[2:4] for b in bits(sf).reshape(-1).tolist()]
    return [v for sf in data[2:4] for v in sf.reshape(-1).tolist()]


@pytest.mark.parametrize(("name", "case"), FP8_CASES)
def test_value_distribution(name, case):
    """Every finite e4m3 code (and no NaN) in both operands; scales fill the declared range."""
    data = problem(name).generate_input(**case)
    for operand in data[:2]:
        codes = set(bits(operand).unique().tolist())
        assert codes <= set(NAN_FREE_E4M3), "no NaN elements"
        if operand.numel() >= 16384:  # 254 codes, each expected at least 64 times
            assert codes == set(NAN_FREE_E4M3)
    log2_min, log2_max = map(float, spec(name)["distribution"]["scale_log2"])
    values = scale_values(name, data)
    binades = {math.floor(math.log2(v)) for v in values}
    if name == "mxfp8_gemm":  # powers of two from the one nearest 2^min to the one nearest 2^max
        assert binades <= set(range(int(log2_min), int(log2_max) + 1))
        enough = len(values) >= 2000
    else:  # 2^e * (1 + f), e in [min, max): every mantissa, never 2^max itself
        assert min(values) >= 2.0**log2_min and max(values) < 2.0**log2_max
        assert binades <= set(range(int(log2_min), int(log2_max)))
        assert len({v / 2.0 ** math.floor(math.log2(v)) for v in values}) > 0.9 * len(values), "full mantissas"
        enough = len(values) >= 200
    if enough:
        assert binades >= set(range(int(log2_min) + 1, int(log2_max) - 1)), "every binade of the range"


@pytest.mark.parametrize(("name", "case"), FP8_CASES)
def test_inputs_are_generated_on_the_target_device(name, case):
    """No host draw and copy: on another device (meta here) the CPU only builds the key table."""
    problem(name).generate_input(**case, device="meta")  # builds the cached scale lookup once
    log = CpuTensorLog()
    with log:
        data = problem(name).generate_input(**{**case, "seed": case["seed"] + 1}, device="meta")
    assert all(t.device.type == "meta" for t in tensors_of(data))
    assert log.sizes and max(log.sizes) <= 3 * 4, log.sizes  # (start, k0, k1) per stream, 4 streams


def test_an_operands_bits_ignore_the_other_operands_shapes():
    for name in ("mxfp8_gemm", "fp8_blockwise_gemm"):
        narrow = problem(name).generate_input(m=128, n=128, k=512, seed=3)
        wide = problem(name).generate_input(m=128, n=384, k=512, seed=3)
        assert torch.equal(bits(narrow[0]), bits(wide[0])) and torch.equal(bits(narrow[2]), bits(wide[2]))


# --- reference against the oracle -------------------------------------------------------------


@pytest.mark.parametrize(("name", "case"), FP8_CASES)
def test_ref_kernel_matches_float64_oracle(name, case):
    data = problem(name).generate_input(**case)
    got = problem(name).ref_kernel(data)
    expected = oracle_fp8.PROBLEM_ORACLES[name](data)
    atol, rtol = tolerance(name)
    assert got.dtype == torch.bfloat16 and got.shape == expected.shape
    assert expected.isfinite().all() and expected.abs().median() > 1, "outputs well inside bf16, mostly above atol"
    # Both are float64 sums rounded once to bf16: equal but for a rare element whose float64 sums
    # (in different orders) straddle a rounding midpoint, one bf16 ulp apart.
    error = (got.double() - expected.double()).abs()
    ulp = 2.0**-7 * expected.double().abs()
    assert (error <= ulp).all() and (error <= atol + rtol * expected.double().abs()).all()
    assert float((got != expected).double().mean()) < 1e-3
