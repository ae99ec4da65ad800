"""reference.quantize against the oracle: scale choice, rounding, error bounds, zeros, global scale."""

from __future__ import annotations

import math

import oracle
import pytest
import torch

from reference import formats
from reference.quantize import dequantize, quantize


def random_blocks(rows: int, k: int, seed: int, decades: tuple[float, float] = (-2, 2.5)) -> torch.Tensor:
    """Normal data, each block scaled by 10**u, u uniform in ``decades``.

    The default range gives block scales from e4m3 subnormals (amax/6 < 2^-6) up to ~100.
    """
    gen = torch.Generator().manual_seed(seed)
    data = torch.randn(rows, k, generator=gen)
    block_magnitude = 10.0 ** torch.empty(rows, k // 16).uniform_(*decades, generator=gen)
    return data * block_magnitude.repeat_interleave(16, dim=1)


def oracle_quantize(x: torch.Tensor) -> tuple[list[list[int]], list[list[int]]]:
    """(codes, scale bytes) by the definition: scale = RNE_e4m3(amax / 6), code = RNE_e2m1(x / scale)."""
    all_codes, all_scales = [], []
    for row in x.tolist():
        row_codes, row_scales = [], []
        for start in range(0, len(row), 16):
            block = row[start : start + 16]
            scale_byte = oracle.e4m3_nearest(max(abs(v) for v in block) / oracle.E2M1_MAX)
            scale = oracle.E4M3_TABLE[scale_byte]
            row_scales.append(scale_byte)
            row_codes.extend(oracle.e2m1_nearest_code(v / scale if scale else v * 0.0) for v in block)
        all_codes.append(row_codes)
        all_scales.append(row_scales)
    return all_codes, all_scales


@pytest.mark.parametrize("shape", [(7, 48), (3, 16), (33, 80)])
def test_quantize_matches_the_definition(shape):
    x = random_blocks(*shape, seed=sum(shape))
    packed, scales = quantize(x)
    assert packed.shape == (shape[0], shape[1] // 2) and packed.dtype == torch.uint8
    assert scales.shape == (shape[0], shape[1] // 16) and scales.dtype == formats.E4M3
    expected_codes, expected_scales = oracle_quantize(x)
    assert scales.view(torch.uint8).tolist() == expected_scales
    got_codes = [[c for byte in row for c in oracle.unpack_byte(byte)] for row in packed.tolist()]
    assert got_codes == expected_codes


def test_error_within_half_an_e2m1_step_times_the_block_scale():
    """|x - dequantize(quantize(x))| <= half the e2m1 gap around x/s, times s.

    Past 6 the bound is the saturation error: at most 6/16 of s with a normal scale (a normal
    scale is within 1/16 of amax/6); a subnormal scale can round down by more, and then the
    block's largest elements saturate by more (up to |x|/s - 6).
    """
    x = random_blocks(64, 128, seed=3)
    packed, scales = quantize(x)
    back = dequantize(packed, scales)
    scale_bytes = scales.view(torch.uint8).tolist()
    checked_normal = 0
    for r, (row, row_back) in enumerate(zip(x.tolist(), back.tolist())):
        for k, (value, got) in enumerate(zip(row, row_back)):
            byte = scale_bytes[r][k // 16]
            scale = oracle.E4M3_TABLE[byte]
            assert scale > 0
            bound = oracle.e2m1_half_gap(value / scale) * scale
            assert abs(value - got) <= bound * (1 + 1e-6), (r, k, value, got, scale)
            if scale >= oracle.E4M3_MIN_NORMAL:
                # A normal scale is within 1/16 of amax/6, so nothing saturates by more than 6/16.
                assert abs(value / scale) <= 6 * (1 + 1 / 16)
                checked_normal += 1
    assert checked_normal > 0.5 * x.numel()
    subnormal = [b for row in scale_bytes for b in row if oracle.e4m3_is_subnormal(b)]
    assert len(subnormal) > 10, "the data should exercise subnormal scales too"


def test_all_zero_blocks():
    x = torch.zeros(3, 48)
    x[1, 16:32] = torch.linspace(-3, 3, 16)
    x[2, :16] = -0.0
    packed, scales = quantize(x)
    scale_bytes = scales.view(torch.uint8)
    assert scale_bytes[0].tolist() == [0, 0, 0] and scale_bytes[1, 0] == 0 and scale_bytes[1, 2] == 0
    assert scale_bytes[1, 1] == oracle.e4m3_nearest(3.0 / 6)
    codes = formats.unpack_nibbles(packed)
    assert codes[0].eq(0).all() and codes[1, :16].eq(0).all()
    assert codes[2, :16].eq(8).all(), "-0.0 keeps its sign bit"
    back = dequantize(packed, scales)
    assert torch.isfinite(back).all()
    assert back[0].eq(0).all() and back[2].eq(0).all()


def test_underflowing_block_quantizes_to_zero():
    x = torch.full((1, 16), 1e-6)  # amax / 6 is below half the smallest subnormal (2^-10)
    packed, scales = quantize(x)
    assert scales.view(torch.uint8).item() == 0
    assert dequantize(packed, scales).eq(0).all()


def test_exactly_representable_blocks_round_trip():
    """Blocks holding a +-6 have scale amax/6 exactly, so quantize(dequantize(q)) == q, -0 included."""
    gen = torch.Generator().manual_seed(4)
    codes = torch.randint(0, 16, (20, 64), generator=gen, dtype=torch.uint8)
    codes[:, ::16] = torch.where(torch.rand(20, 4, generator=gen) < 0.5, 7, 15).to(torch.uint8)
    finite_nonzero = [b for b in range(1, 0x7F) if oracle.E4M3_TABLE[b] * 6 <= 448]
    picks = torch.randint(0, len(finite_nonzero), (20, 4), generator=gen)
    scale_bytes = torch.tensor(finite_nonzero, dtype=torch.uint8)[picks]
    packed = formats.pack_nibbles(codes)
    values = dequantize(packed, scale_bytes.view(formats.E4M3))
    again, again_scales = quantize(values)
    assert torch.equal(again_scales.view(torch.uint8), scale_bytes)
    assert torch.equal(again, packed)


def test_dequantize_matches_oracle_on_every_code_and_scale():
    gen = torch.Generator().manual_seed(5)
    packed = torch.randint(0, 256, (256, 32), generator=gen, dtype=torch.uint8)
    scale_bytes = torch.arange(256, dtype=torch.uint8).view(256, 1).repeat(1, 4)
    got = dequantize(packed, scale_bytes.view(formats.E4M3)).to(torch.float64)
    expected = oracle.decode_operand(packed.unsqueeze(-1), scale_bytes.unsqueeze(-1)).squeeze(-1)
    assert got.shape == (256, 64) and got.dtype == torch.float64
    assert torch.equal(got.isnan(), expected.isnan())
    assert torch.equal(torch.nan_to_num(got), torch.nan_to_num(expected))


def test_global_scale():
    x = random_blocks(16, 64, seed=6, decades=(3, 7))  # amax far beyond 6 * 448
    amax = x.abs().max().item()
    assert amax / 6 > 448
    global_scale = amax / (6 * 448)
    packed, scales = quantize(x, global_scale)
    assert scales.view(torch.uint8).max().item() <= 0x7E
    reduced = (x.to(torch.float32) / global_scale).to(torch.float32)
    plain_packed, plain_scales = quantize(reduced)
    assert torch.equal(packed, plain_packed) and torch.equal(scales.view(torch.uint8), plain_scales.view(torch.uint8))
    back = dequantize(packed, scales, global_scale)
    assert torch.allclose(back, dequantize(packed, scales) * global_scale)
    scale_values = formats.decode_e4m3(scales).repeat_interleave(16, dim=1)
    bound = torch.tensor([[oracle.e2m1_half_gap(v) for v in row] for row in (reduced / scale_values).tolist()])
    assert (scale_values > 0).all()
    assert ((x - back).abs() <= bound * scale_values * global_scale * (1 + 1e-5)).all()


def test_quantize_saturates_infinite_blocks():
    x = torch.ones(1, 16)
    x[0, 3] = math.inf
    packed, scales = quantize(x)
    assert scales.view(torch.uint8).item() == 0x7E
    assert formats.unpack_nibbles(packed)[0, 3].item() == 7


def test_shape_errors():
    with pytest.raises(ValueError):
        quantize(torch.zeros(2, 24))
    with pytest.raises(ValueError):
        dequantize(torch.zeros(2, 16, dtype=torch.uint8), torch.zeros(2, 1, dtype=formats.E4M3))
    with pytest.raises(ValueError):
        quantize(torch.tensor([[math.nan] * 16]))
