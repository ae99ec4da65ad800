"""problems.shared.operand_formats: element bytes and block scales of each format, from their definitions."""

from __future__ import annotations

import math

import oracle
import pytest
import torch

from problems.shared import counter_rng as rng
from problems.shared import operand_formats as of

SAMPLE = 1 << 17


def test_e4m3_elements_keep_every_finite_byte_and_zero_the_nan_ones():
    every = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    got = of.MXFP8.element_bytes(every).tolist()
    nan_bytes = [b for b in range(256) if math.isnan(oracle.E4M3_TABLE[b])]
    assert nan_bytes == [0x7F, 0xFF]
    assert got == [(b & 0x80) if b in nan_bytes else b for b in range(256)]
    assert torch.equal(of.NVFP4.element_bytes(every), every), "NVFP4 bytes are left as drawn"


def _words(count: int, seed: int = 5) -> torch.Tensor:
    return rng.random_words(seed, [("sfa", count)], "cpu")[0]


def test_float32_scales_from_the_bit_fields():
    count = 4096
    words = _words(2 * count)
    got = of.float32_scales(words, (64, 64), -12.0, -4.0)
    assert got.dtype == torch.float32 and got.shape == (64, 64)
    unsigned = [w & 0xFFFFFFFF for w in words.tolist()]
    for index, value in enumerate(got.flatten().tolist()):
        exponent = -12 + (unsigned[index] * 8 >> 32)
        fraction = (unsigned[count + index] & 0x7FFFFF) / 2**23
        assert value == math.ldexp(1 + fraction, exponent)


def test_float32_scales_fill_the_range_uniformly_by_binade():
    got = of.float32_scales(_words(2 * SAMPLE, seed=6), (SAMPLE,), -12.0, -4.0).double()
    assert float(got.min()) >= 2.0**-12 and float(got.max()) < 2.0**-4
    binades = torch.bincount(torch.floor(torch.log2(got)).long() + 12, minlength=8)
    assert binades.shape == (8,)
    assert (binades - SAMPLE / 8).abs().max() < 8 * math.sqrt(SAMPLE / 8)
    mantissa_bits = got.float().view(torch.int32) & 0x7FFFFF
    for bit in range(23):
        ones = int((mantissa_bits >> bit & 1).sum())
        assert abs(ones - SAMPLE / 2) < 8 * math.sqrt(SAMPLE / 4), f"mantissa bit {bit}"


@pytest.mark.parametrize("bounds", [(-12.5, -4.0), (-4.0, -12.0), (-127.0, 0.0), (0.0, 129.0)])
def test_float32_scales_take_an_integer_range_of_normal_binades(bounds):
    with pytest.raises(ValueError, match="scale_log2"):
        of.float32_scales(_words(2), (1,), *bounds)


def test_float32_scales_count_their_words():
    with pytest.raises(ValueError, match="take 4 words"):
        of.float32_scales(_words(3), (2,), -12.0, -4.0)


def test_formats_are_data():
    assert [f.block for f in (of.NVFP4, of.MXFP8, of.FP8_1X128, of.FP8_128X128)] == [
        (1, 16), (1, 32), (1, 128), (128, 128)]  # fmt: skip
    assert [f.words_per_scale for f in (of.NVFP4, of.MXFP8, of.FP8_1X128)] == [1, 1, 2]
    (table,) = of.MXFP8.scales([_words(8)], [(2, 4)], -12.0, -4.0)
    assert table.dtype == torch.float8_e8m0fnu and table.shape == (2, 4)
    assert of.scale_table(-12.0, -4.0, torch.float8_e8m0fnu) is of.scale_table(-12.0, -4.0, torch.float8_e8m0fnu)
