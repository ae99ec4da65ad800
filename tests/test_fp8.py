"""reference.fp8 against the float64 oracle: MXFP8 and blockwise fp8 decoding and quantization."""

from __future__ import annotations

import math

import oracle
import oracle_fp8
import pytest
import torch

from reference import formats, fp8


def random_codes(rows: int, k: int, seed: int) -> torch.Tensor:
    """Every finite e4m3 byte, uniformly (torch's generator: the test's own data, not the problems')."""
    gen = torch.Generator().manual_seed(seed)
    raw = torch.randint(0, 256, (rows, k), generator=gen, dtype=torch.int32).to(torch.uint8)
    return torch.where(raw & 0x7F == 0x7F, raw & 0x80, raw).view(formats.E4M3)


def test_mxfp8_dequantize_matches_the_oracle():
    data = random_codes(40, 96, seed=1)
    scales = torch.randint(100, 150, (40, 3), generator=torch.Generator().manual_seed(2), dtype=torch.int32)
    scales = scales.to(torch.uint8).view(formats.E8M0)
    got = fp8.dequantize_mxfp8(data, scales)
    assert got.dtype == torch.float64
    assert torch.equal(got, oracle_fp8.mx_operand(data, scales))


@pytest.mark.parametrize("block_rows", [1, 128])
def test_blockwise_dequantize_matches_the_oracle_on_ragged_shapes(block_rows):
    rows, k = 200, 384
    data = random_codes(rows, k, seed=3)
    grid = fp8.block_grid(rows, k, (block_rows, 128))
    scales = torch.rand(grid, generator=torch.Generator().manual_seed(4)) + 0.01
    got = fp8.dequantize_blockwise(data, scales, (block_rows, 128))
    assert torch.equal(got, oracle_fp8.blockwise_operand(data, scales, block_rows))
    m_major = scales.t().contiguous().t()
    assert torch.equal(fp8.dequantize_blockwise(data, m_major, (block_rows, 128)), got)


def test_dequantize_checks_the_scale_shape_and_dtype():
    data = random_codes(4, 64, seed=5)
    with pytest.raises(ValueError, match="has \\(4, 2\\) scales"):
        fp8.dequantize_mxfp8(data, torch.zeros(4, 3, dtype=torch.uint8).view(formats.E8M0))
    with pytest.raises(TypeError, match="float32"):
        fp8.dequantize_blockwise(data, torch.ones(4, 1, dtype=torch.float64), (1, 128))


def test_block_grid_counts_ragged_blocks():
    assert fp8.block_grid(2112, 7168, fp8.WEIGHT_BLOCK) == (17, 56)
    assert fp8.block_grid(64, 7168, fp8.ACTIVATION_BLOCK) == (64, 56)
    assert fp8.block_grid(128, 256, fp8.MX_BLOCK) == (128, 8)


def test_quantize_mxfp8_rounds_the_scale_up_and_elements_to_nearest():
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(3, 16, 128, generator=gen, dtype=torch.float64) * 10
    x[0, 0, :32] = 0  # an all-zero block
    data, scales = fp8.quantize_mxfp8(x)
    assert data.dtype == formats.E4M3 and scales.dtype == formats.E8M0 and scales.shape == (3, 16, 4)
    amax = x.abs().unflatten(-1, (4, 32)).amax(-1)
    assert scales.view(torch.uint8).flatten().tolist() == [oracle_fp8.e8m0_round_up(v / 448) for v in amax.flatten()]
    scale_values = torch.tensor(oracle_fp8.E8M0_TABLE)[scales.view(torch.uint8).long()].repeat_interleave(32, -1)
    expected = [oracle.e4m3_nearest(v) for v in (x / scale_values).flatten().tolist()]
    assert data.view(torch.uint8).flatten().tolist() == expected
    assert (data.view(torch.uint8) & 0x7F).max() < 0x7F, "no NaN, and no element saturates"
    decoded = fp8.dequantize_mxfp8(data, scales)
    assert ((decoded - x).abs() <= scale_values * 16 + 1e-300).all()  # half an e4m3 ulp of 2^8 * scale


@pytest.mark.parametrize("block", [fp8.ACTIVATION_BLOCK, fp8.WEIGHT_BLOCK])
def test_quantize_blockwise_round_trips_within_half_an_e4m3_ulp(block):
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(200, 384, generator=gen, dtype=torch.float64)
    data, scales = fp8.quantize_blockwise(x, block)
    assert scales.dtype == torch.float32 and tuple(scales.shape) == fp8.block_grid(200, 384, block)
    decoded = fp8.dequantize_blockwise(data, scales, block)
    relative = (decoded - x).abs() / x.abs().clamp_min(1e-12)
    # e4m3 has 3 mantissa bits: nearest rounding is within 2^-4 of normal values.
    assert float(relative[x.abs() > 448 * 2.0**-6 * scales.max().item()].max()) <= 2.0**-4 + 1e-9
    amax = oracle_fp8.blockwise_operand(data, scales, block[0]).abs().max()
    assert math.isclose(float(amax), float(x.abs().max()), rel_tol=2.0**-4)
