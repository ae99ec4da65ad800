"""The four NVFP4 problems' inputs and reference: input contract, determinism, value distribution,
the device the inputs are made on, and the reference against the float64 oracle (the fp8
problems: tests/test_fp8_problems.py).

Cases: tests/problem_cases.py (every ``cpu_tests`` entry of each task.yml, ragged shapes, and the
smallest contest tests).
"""

from __future__ import annotations

import math

import oracle
import pytest
import torch
from problem_cases import (
    CASES,
    E4M3,
    FP4,
    CpuTensorLog,
    as_list,
    bits,
    expected_shapes,
    operands,
    problem,
    spec,
    tensors_of,
    tolerance,
)

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
