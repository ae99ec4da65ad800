"""reference.ops against the float64 oracle, both backends; the scaled_mm one through an emulator."""

from __future__ import annotations

import importlib
import math
from pathlib import Path

import oracle
import oracle_fp8
import pytest
import torch
import yaml

from reference import formats, layouts, ops

FINITE_SCALE_BYTES = torch.tensor([b for b in range(256) if not math.isnan(oracle.E4M3_TABLE[b])], dtype=torch.uint8)


def contest_operand(rows: int, k: int, batches: int, seed: int, scale_bytes: torch.Tensor | None = None):
    """(rows, K/2, L) uint8 and (rows, K/16, L) e4m3 views of (L, rows, ...) storage."""
    gen = torch.Generator().manual_seed(seed)
    data = torch.randint(0, 256, (batches, rows, k // 2), generator=gen, dtype=torch.uint8)
    choices = FINITE_SCALE_BYTES if scale_bytes is None else scale_bytes
    picks = torch.randint(0, len(choices), (batches, rows, k // 16), generator=gen)
    scales = choices[picks]
    return data.permute(1, 2, 0), scales.permute(1, 2, 0).view(formats.E4M3)


def exact_product(a, sfa, b, sfb) -> tuple[torch.Tensor, torch.Tensor]:
    """(correctly rounded C by math.fsum, sum of |terms| for error bounds)."""
    a_values = oracle.decode_operand(a.view(torch.uint8), sfa.view(torch.uint8))
    b_values = oracle.decode_operand(b.view(torch.uint8), sfb.view(torch.uint8))
    return oracle.mm_fsum(a_values, b_values), oracle.mm_float64(a_values.abs(), b_values.abs())


# --- pick_backend -----------------------------------------------------------------------------


def test_pick_backend_on_cpu_is_decode():
    assert ops.pick_backend("cpu") == "decode"
    assert ops.pick_backend(torch.device("cpu")) == "decode"


@pytest.mark.parametrize(("triton_found", "backend"), [(True, "blocks"), (False, "decode")])
def test_pick_backend_on_cuda_is_the_block_kernel_wherever_triton_is(monkeypatch, triton_found, backend):
    """The float64 result on every CUDA device (Blackwell's fp32-accumulating scaled_mm only by name);
    with no shape named, the block kernel, which takes every shape, wherever Triton is installed."""
    monkeypatch.setattr(ops.importlib.util, "find_spec", lambda name: object() if triton_found else None)
    assert ops.pick_backend("cuda:0") == backend


@pytest.mark.parametrize(("shape", "backend"), [
    ((128, 7168, 16384), "limbs"),  # the GEMM's benchmark shapes, the grouped GEMM's groups
    ((40, 4096, 7168), "limbs"),
    ((6, 8, 256), "limbs"),  # 3M = 18 stacked rows: torch._int_mm takes more than 16
    ((5, 8, 256), "blocks"),
    ((7168, 1, 16384), "blocks"),  # the GEMV's vector
    ((128, 100, 256), "blocks"),  # N not a multiple of 8
    ((128, 128, 2**17), "blocks"),  # K past int32's exact accumulation of int8 digit products
])
def test_pick_backend_on_cuda_takes_the_int8_digits_where_the_shape_fits(monkeypatch, shape, backend):
    monkeypatch.setattr(ops.importlib.util, "find_spec", lambda name: object())
    assert ops.pick_backend("cuda:0", shape) == backend
    assert ops.pick_backend("cpu", shape) == "decode"


def test_limb_product_refuses_a_shape_it_does_not_fit():
    a, sfa = torch.zeros((4, 128, 1), dtype=torch.uint8), torch.zeros((4, 16, 1), dtype=torch.uint8)
    with pytest.raises(ValueError, match="does not take M=4"):
        ops.block_scaled_mm(a, sfa, a, sfa, backend="limbs")


# --- decode backend ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "n", "k", "l"),
    [(40, 24, 48, 2), (130, 9, 80, 1), (3, 5, 16, 3), (129, 2, 112, 1)],
    ids=["K/16=3,L=2", "M=130,K/16=5", "K/16=1,L=3", "M=129,K/16=7"],
)
def test_decode_backend_matches_fsum_oracle(m, n, k, l):
    a, sfa = contest_operand(m, k, l, seed=m + k)
    b, sfb = contest_operand(n, k, l, seed=n + 2 * k)
    got = ops.block_scaled_mm(a.view(formats.FP4), sfa, b.view(formats.FP4), sfb, backend="decode")
    exact, magnitude = exact_product(a, sfa, b, sfb)
    assert got.shape == (m, n, l) and got.dtype == torch.float64
    assert ((got - exact).abs() <= 1e-13 * magnitude).all()
    assert torch.equal(ops.block_scaled_mm(a, sfa, b, sfb), got), "uint8 and fp4 views, default backend on cpu"


def test_decode_backend_vectorized_oracle_agrees_with_fsum():
    a, sfa = contest_operand(20, 96, 2, seed=1)
    b, sfb = contest_operand(12, 96, 2, seed=2)
    exact, magnitude = exact_product(a, sfa, b, sfb)
    fast = oracle.mm_float64(oracle.operand(a, sfa), oracle.operand(b, sfb))
    assert ((fast - exact).abs() <= 1e-13 * magnitude).all()


def test_decode_backend_nan_scale_poisons_only_its_row():
    a, sfa = contest_operand(4, 32, 1, seed=3, scale_bytes=torch.tensor([0x38], dtype=torch.uint8))
    b, sfb = contest_operand(3, 32, 1, seed=4, scale_bytes=torch.tensor([0x38], dtype=torch.uint8))
    sfa = sfa.view(torch.uint8).clone()
    sfa[2, 1, 0] = 0x7F
    got = ops.block_scaled_mm(a, sfa.view(formats.E4M3), b, sfb)
    assert got[2].isnan().all() and not got[[0, 1, 3]].isnan().any()


def test_shape_mismatch_is_rejected():
    a, sfa = contest_operand(4, 32, 1, seed=5)
    b, sfb = contest_operand(4, 64, 1, seed=6)
    with pytest.raises(ValueError):
        ops.block_scaled_mm(a, sfa, b, sfb)
    c, sfc = contest_operand(4, 32, 2, seed=7)
    with pytest.raises(ValueError):
        ops.block_scaled_mm(a, sfa, c, sfc)


def test_silu_mul_matches_oracle():
    gate = torch.linspace(-30, 30, 121, dtype=torch.float64)
    up = torch.linspace(2, -2, 121, dtype=torch.float64)
    assert torch.allclose(ops.silu_mul(gate, up), oracle.silu(gate) * up, rtol=1e-14, atol=1e-300)


# --- scaled_mm backend, through an emulated torch._scaled_mm ------------------------------------


class ScaledMmEmulator:
    """torch._scaled_mm for NVFP4 operands, on the CPU, from the definitions.

    Argument checks follow torch's CUDA implementation (aten/src/ATen/native/cuda/ScaledBlas.cpp,
    _scaled_mm_out_cuda and is_blockwise_1x16_scaling): 2-D float4_e2m1fn_x2 operands,
    mat1 (M, K/2) row-major, mat2 (K/2, N) column-major, K/2 and N multiples of 16, scales
    contiguous float8_e4m3fn with round_up(rows, 128) * round_up(K/16, 4) elements, no fast
    accumulation. Values: operands decoded by the oracle, scales read through the oracle's
    blocked byte-offset formula, product in float64, rounded to ``out_dtype``.
    """

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(
        self, mat1, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False
    ):
        fail = RuntimeError
        if mat1.dim() != 2 or mat2.dim() != 2:
            raise fail("mat1 and mat2 must be matrices")
        if mat1.dtype != formats.FP4 or mat2.dtype != formats.FP4:
            raise fail(f"expected float4_e2m1fn_x2 operands, got {mat1.dtype}, {mat2.dtype}")
        rows, half_k = mat1.shape
        if mat2.shape[0] != half_k:
            raise fail(f"mat1 and mat2 shapes cannot be multiplied ({tuple(mat1.shape)} and {tuple(mat2.shape)})")
        cols = mat2.shape[1]
        if half_k % 16:
            raise fail(f"Expected trailing dimension of mat1 to be divisible by 16, got {tuple(mat1.shape)}")
        if mat2.shape[0] % 16 or mat2.shape[1] % 16:
            raise fail(f"mat2 shape {tuple(mat2.shape)} must be divisible by 16")
        if mat1.stride(1) != 1 or mat1.stride(0) != half_k:
            raise fail(f"mat1 must be row-major, strides {mat1.stride()}")
        if mat2.stride(0) != 1 or mat2.stride(1) != half_k:
            raise fail(f"mat2 must be column-major, strides {mat2.stride()}")
        sf_cols = half_k * 2 // 16
        for name, scale, scale_rows in (("scale_a", scale_a, rows), ("scale_b", scale_b, cols)):
            if scale.dtype != formats.E4M3 or not scale.is_contiguous():
                raise fail(f"{name} must be contiguous float8_e4m3fn, got {scale.dtype}")
            if scale.numel() != oracle.blocked_size(scale_rows, sf_cols):
                raise fail(f"{name} must have {oracle.blocked_size(scale_rows, sf_cols)} elements, got {scale.numel()}")
        if use_fast_accum or bias is not None or scale_result is not None:
            raise fail("not used by the NVFP4 reference")
        if out_dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise fail(f"unsupported out_dtype {out_dtype}")
        self.calls.append({"shape": (rows, half_k * 2, cols), "out_dtype": out_dtype})
        sfa = oracle.plain_from_blocked(scale_a.view(torch.uint8), rows, sf_cols)
        sfb = oracle.plain_from_blocked(scale_b.view(torch.uint8), cols, sf_cols)
        a_values = oracle.decode_operand(mat1.view(torch.uint8).unsqueeze(-1), sfa.unsqueeze(-1))
        b_values = oracle.decode_operand(mat2.t().view(torch.uint8).unsqueeze(-1), sfb.unsqueeze(-1))
        return oracle.mm_float64(a_values, b_values).squeeze(-1).to(out_dtype)


@pytest.fixture
def emulator(monkeypatch) -> ScaledMmEmulator:
    fake = ScaledMmEmulator()
    monkeypatch.setattr(torch, "_scaled_mm", fake)
    return fake


def assert_close_to_exact(got, exact, magnitude):
    """float32 output: within float32 rounding of the exact value (plus float64 summation)."""
    assert got.dtype == torch.float32
    assert ((got.to(torch.float64) - exact).abs() <= 2.0**-24 * exact.abs() + 1e-13 * magnitude).all()


@pytest.mark.parametrize(
    ("m", "n", "k", "l"),
    [(40, 32, 64, 2), (130, 48, 96, 1), (256, 16, 32, 3)],
    ids=["M=40,L=2", "M=130", "M=256,L=3"],
)
def test_scaled_mm_backend_on_shapes_scaled_mm_takes(emulator, m, n, k, l):
    a, sfa = contest_operand(m, k, l, seed=m)
    b, sfb = contest_operand(n, k, l, seed=n + 1)
    got = ops.block_scaled_mm(a.view(formats.FP4), sfa, b.view(formats.FP4), sfb, backend="scaled_mm")
    assert got.shape == (m, n, l)
    assert_close_to_exact(got, *exact_product(a, sfa, b, sfb))
    assert len(emulator.calls) == l
    assert all(call["shape"] == (m, k, n) for call in emulator.calls)


@pytest.mark.parametrize(
    ("m", "n", "k", "l"),
    [(40, 1, 64, 2), (72, 40, 192, 1), (130, 136, 48, 2), (5, 24, 16, 1)],
    ids=["gemv N=1", "N=40", "K/16=3,N=136", "K/16=1"],
)
def test_scaled_mm_backend_on_shapes_it_must_pad(emulator, m, n, k, l):
    """N not a multiple of 16 (the GEMV's single row) or an odd count of K blocks."""
    a, sfa = contest_operand(m, k, l, seed=m + 3)
    b, sfb = contest_operand(n, k, l, seed=n + 4)
    got = ops.block_scaled_mm(a, sfa, b, sfb, backend="scaled_mm")
    assert got.shape == (m, n, l)
    assert_close_to_exact(got, *exact_product(a, sfa, b, sfb))
    assert len(emulator.calls) == l


def test_scaled_mm_backend_accepts_row_contiguous_batches(emulator):
    """Operands stored (rows, K/2, L) contiguous: each batch slice is strided, not row-major."""
    a, sfa = contest_operand(32, 64, 2, seed=8)
    b, sfb = contest_operand(16, 64, 2, seed=9)
    got = ops.block_scaled_mm(a.contiguous(), sfa.contiguous(), b.contiguous(), sfb.contiguous(), backend="scaled_mm")
    assert_close_to_exact(got, *exact_product(a, sfa, b, sfb))


def test_emulator_rejects_wrong_arguments():
    """The emulator is strict: plain (unblocked) scales compute something else, bad layouts raise."""
    fake = ScaledMmEmulator()
    a, sfa = contest_operand(128, 64, 1, seed=10)
    b, sfb = contest_operand(32, 64, 1, seed=11)
    a2, b2 = a[:, :, 0].view(formats.FP4), b[:, :, 0].view(formats.FP4)
    blocked_a = layouts.to_blocked(sfa[:, :, 0])
    blocked_b = layouts.to_blocked(sfb[:, :, 0])
    exact, _ = exact_product(a, sfa, b, sfb)
    good = fake(a2, b2.t(), blocked_a, blocked_b, out_dtype=torch.float32)
    assert torch.allclose(good.to(torch.float64), exact[:, :, 0], rtol=1e-6, atol=1e-6)
    plain_a = sfa[:, :, 0].contiguous().reshape(-1)  # 128 x 4: same size as its blocked layout
    wrong = fake(a2, b2.t(), plain_a, blocked_b, out_dtype=torch.float32)
    assert not torch.allclose(wrong.to(torch.float64), exact[:, :, 0], rtol=1e-3, atol=1e-3)
    with pytest.raises(RuntimeError):
        fake(a2, b2.t().contiguous(), blocked_a, blocked_b, out_dtype=torch.float32)  # row-major mat2
    with pytest.raises(RuntimeError):
        fake(a2, b2[:1].t(), blocked_a, layouts.to_blocked(sfb[:1, :, 0]), out_dtype=torch.float32)  # N = 1
    with pytest.raises(RuntimeError):
        fake(a2, b2.t(), blocked_a[:-4], blocked_b, out_dtype=torch.float32)


PROBLEMS = ("nvfp4_gemv", "nvfp4_gemm", "nvfp4_dual_gemm", "nvfp4_group_gemm")
ROOT = Path(__file__).resolve().parents[1]


def cpu_cases():
    for name in PROBLEMS:
        spec = yaml.safe_load((ROOT / "problems" / name / "task.yml").read_text())
        for case in spec["cpu_tests"]:
            yield pytest.param(name, case, id=f"{name}-{'-'.join(str(v) for v in case.values())}")


@pytest.mark.parametrize(("name", "case"), list(cpu_cases()))
def test_problem_references_agree_on_the_scaled_mm_path(monkeypatch, emulator, name, case):
    """Each problem's ref_kernel, as Blackwell would run it, within tolerance of the decode path."""
    problem = importlib.import_module(f"problems.{name}.reference")
    data = problem.generate_input(**case)
    decoded = problem.ref_kernel(data)
    monkeypatch.setattr(ops, "pick_backend", lambda device, shape=None: "scaled_mm")
    blackwell = problem.ref_kernel(data)
    assert emulator.calls, "the scaled_mm path was not taken"
    ok, message = problem.check_implementation(data, blackwell)
    assert ok, message
    assert problem.check_implementation(data, decoded)[0]


# --- the fp8 products -------------------------------------------------------------------------


def fp8_operand(rows: int, k: int, seed: int) -> torch.Tensor:
    """(rows, K) e4m3 with every finite code possible (NaN bytes moved to signed zero)."""
    raw = torch.randint(0, 256, (rows, k), generator=torch.Generator().manual_seed(seed), dtype=torch.int32)
    raw = raw.to(torch.uint8)
    return torch.where(raw & 0x7F == 0x7F, raw & 0x80, raw).view(formats.E4M3)


def fsum_product(a_values: torch.Tensor, b_values: torch.Tensor) -> torch.Tensor:
    """The correctly rounded float64 C of (rows, K) values, through the oracle's fsum loops."""
    return oracle.mm_fsum(a_values.unsqueeze(-1), b_values.unsqueeze(-1))[:, :, 0]


def test_mxfp8_mm_matches_the_fsum_oracle():
    a, b = fp8_operand(24, 96, seed=1), fp8_operand(20, 96, seed=2)
    gen = torch.Generator().manual_seed(3)
    sfa, sfb = (torch.randint(110, 135, (rows, 3), generator=gen).to(torch.uint8).view(formats.E8M0)
                for rows in (24, 20))
    got = ops.mxfp8_mm(a, sfa, b, sfb)
    expected = fsum_product(oracle_fp8.mx_operand(a, sfa), oracle_fp8.mx_operand(b, sfb))
    magnitude = oracle_fp8.mm(oracle_fp8.mx_operand(a, sfa).abs(), oracle_fp8.mx_operand(b, sfb).abs())
    assert got.dtype == torch.float64 and got.shape == (24, 20)
    assert ((got - expected).abs() <= 96 * 2.0**-53 * magnitude).all()


def test_blockwise_fp8_mm_matches_the_fsum_oracle_with_a_ragged_weight_block():
    m, n, k = 8, 136, 256  # B's second 128-row block holds 8 rows
    a, b = fp8_operand(m, k, seed=4), fp8_operand(n, k, seed=5)
    gen = torch.Generator().manual_seed(6)
    sa = (torch.rand(k // 128, m, generator=gen) + 0.1).t()  # M-major, as the problem hands it
    sb = torch.rand(2, k // 128, generator=gen) + 0.1
    got = ops.blockwise_fp8_mm(a, sa, b, sb)
    a_values, b_values = oracle_fp8.blockwise_operand(a, sa, 1), oracle_fp8.blockwise_operand(b, sb, 128)
    magnitude = oracle_fp8.mm(a_values.abs(), b_values.abs())
    assert ((got - fsum_product(a_values, b_values)).abs() <= k * 2.0**-52 * magnitude).all()


def test_fp8_products_refuse_mismatched_k():
    a, b = fp8_operand(4, 64, seed=7), fp8_operand(4, 32, seed=8)
    ones = torch.full((4, 2), 127, dtype=torch.uint8).view(formats.E8M0)
    with pytest.raises(ValueError, match="disagree on K"):
        ops.mxfp8_mm(a, ones, b, ones[:, :1])
