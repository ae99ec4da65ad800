"""reference.formats against the bit-field oracle: e2m1 codes, rounding, nibble order, e4m3."""

from __future__ import annotations

import itertools
import math

import oracle
import oracle_fp8
import pytest
import torch

from reference import formats

E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
# Round half to even: the code below each midpoint has mantissa bit 0 for 0.25, 1.25, 2.5, 5.
MIDPOINT_CODES = {0.25: 0, 0.75: 2, 1.25: 2, 1.75: 4, 2.5: 4, 3.5: 6, 5.0: 6}


def codes(values, dtype=torch.float32) -> list[int]:
    return formats.encode_e2m1(torch.tensor(values, dtype=dtype)).tolist()


# --- the oracle itself, against the spec's literal table ---------------------------------------


def test_oracle_e2m1_matches_the_spec_table():
    assert oracle.E2M1_TABLE[:8] == (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
    assert [-v for v in oracle.E2M1_TABLE[:8]] == list(oracle.E2M1_TABLE[8:])
    assert math.copysign(1.0, oracle.E2M1_TABLE[8]) == -1.0


def test_oracle_e4m3_landmarks():
    finite = [v for v in oracle.E4M3_TABLE if not math.isnan(v)]
    assert len(finite) == 254
    assert oracle.E4M3_MAX == 448.0
    assert oracle.E4M3_TABLE[0x01] == 2.0**-9
    assert oracle.E4M3_TABLE[0x08] == 2.0**-6
    positives = [oracle.E4M3_TABLE[b] for b in range(0x7F)]
    assert positives == sorted(positives) and len(set(positives)) == 0x7F


# --- e2m1 decode ------------------------------------------------------------------------------


@pytest.mark.parametrize("code", range(16))
def test_decode_every_e2m1_code(code):
    got = formats.decode_e2m1(torch.tensor([code], dtype=torch.uint8)).item()
    expected = oracle.e2m1_value(code)
    assert got == expected
    assert math.copysign(1.0, got) == math.copysign(1.0, expected), f"sign bit of code {code}"
    assert formats.E2M1_VALUES[code] == expected
    assert math.copysign(1.0, formats.E2M1_VALUES[code]) == math.copysign(1.0, expected)


def test_decode_keeps_shape_and_accepts_int64_codes():
    grid = torch.arange(16).reshape(2, 2, 4)
    got = formats.decode_e2m1(grid)
    assert got.shape == (2, 2, 4) and got.dtype == torch.float32
    assert got.flatten().tolist() == list(oracle.E2M1_TABLE)


# --- e2m1 encode ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("midpoint", E2M1_MIDPOINTS)
def test_encode_midpoints_round_half_to_even(midpoint, dtype):
    assert codes([midpoint, -midpoint], dtype) == [MIDPOINT_CODES[midpoint], MIDPOINT_CODES[midpoint] | 8]
    assert oracle.e2m1_nearest_code(midpoint) == MIDPOINT_CODES[midpoint]
    assert oracle.e2m1_nearest_code(-midpoint) == MIDPOINT_CODES[midpoint] | 8


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("midpoint", E2M1_MIDPOINTS)
def test_encode_just_off_midpoints(midpoint, dtype):
    """One ulp (of the input dtype) either side of a midpoint is no longer a tie."""
    mid = torch.tensor(midpoint, dtype=dtype)
    above = torch.nextafter(mid, torch.tensor(math.inf, dtype=dtype)).item()
    below = torch.nextafter(mid, torch.tensor(-math.inf, dtype=dtype)).item()
    values = [above, below, -above, -below]
    assert codes(values, dtype) == [oracle.e2m1_nearest_code(v) for v in values]
    upper = oracle.e2m1_nearest_code(above)
    lower = oracle.e2m1_nearest_code(below)
    assert oracle.e2m1_value(upper) > midpoint > oracle.e2m1_value(lower)


def test_encode_exact_values_round_trip():
    assert codes(list(oracle.E2M1_TABLE)) == list(range(16))


@pytest.mark.parametrize("value", [6.0, 6.5, 7.0, 100.0, 1e30, math.inf])
def test_encode_saturates(value):
    assert codes([value, -value]) == [7, 15]
    assert oracle.e2m1_nearest_code(value) == 7


@pytest.mark.parametrize("value", [-0.0, -1e-30, -0.1, -0.2, -0.25])
def test_negative_values_round_to_negative_zero(value):
    (code,) = codes([value])
    assert code == 8
    decoded = formats.decode_e2m1(torch.tensor([code])).item()
    assert decoded == 0.0 and math.copysign(1.0, decoded) == -1.0


def test_positive_zero_stays_positive():
    assert codes([0.0, 1e-30, 0.25]) == [0, 0, 0]


def test_encode_rejects_nan():
    with pytest.raises(ValueError):
        formats.encode_e2m1(torch.tensor([1.0, math.nan]))


def test_encode_dense_sweep_matches_oracle():
    """Every float32 multiple of 1/64 in [-8, 8], plus random values, against the oracle."""
    grid = torch.arange(-512, 513, dtype=torch.float32) / 64
    gen = torch.Generator().manual_seed(0)
    noise = (torch.rand(4000, generator=gen, dtype=torch.float64) - 0.5) * 16
    for values in (grid, noise):
        expected = [oracle.e2m1_nearest_code(v) for v in values.tolist()]
        assert formats.encode_e2m1(values).tolist() == expected


# --- nibble order -----------------------------------------------------------------------------


def test_pack_puts_element_2i_in_the_low_nibble():
    packed = formats.pack_nibbles(torch.tensor([1, 2, 15, 8], dtype=torch.uint8))
    assert packed.tolist() == [oracle.pack_pair(1, 2), oracle.pack_pair(15, 8)] == [0x21, 0x8F]


def test_unpack_reads_the_low_nibble_first():
    got = formats.unpack_nibbles(torch.tensor([0x21, 0x8F], dtype=torch.uint8))
    assert got.tolist() == [*oracle.unpack_byte(0x21), *oracle.unpack_byte(0x8F)] == [1, 2, 15, 8]


def test_every_byte_unpacks_as_the_oracle_says():
    every = torch.arange(256, dtype=torch.uint8)
    got = formats.unpack_nibbles(every).view(256, 2).tolist()
    assert got == [list(oracle.unpack_byte(b)) for b in range(256)]


def test_pack_unpack_round_trip_on_3d_codes():
    gen = torch.Generator().manual_seed(1)
    code_grid = torch.randint(0, 16, (3, 5, 32), generator=gen, dtype=torch.uint8)
    packed = formats.pack_nibbles(code_grid)
    assert packed.shape == (3, 5, 16)
    assert torch.equal(formats.unpack_nibbles(packed), code_grid)
    assert torch.equal(formats.pack_nibbles(formats.unpack_nibbles(packed)), packed)


def test_unpack_accepts_fp4_views_and_rejects_other_dtypes():
    raw = torch.tensor([[0x21, 0x8F]], dtype=torch.uint8)
    assert formats.unpack_nibbles(raw.view(formats.FP4)).tolist() == [[1, 2, 15, 8]]
    assert formats.as_fp4(raw).dtype == formats.FP4
    assert torch.equal(formats.as_bytes(formats.as_fp4(raw)), raw)
    with pytest.raises(TypeError):
        formats.as_bytes(torch.zeros(2, dtype=torch.float32))


def test_pack_rejects_odd_length():
    with pytest.raises(ValueError):
        formats.pack_nibbles(torch.zeros(3, dtype=torch.uint8))


# --- e4m3 -------------------------------------------------------------------------------------


def test_decode_all_256_e4m3_patterns():
    every = torch.arange(256, dtype=torch.uint8)
    for source in (every, every.view(formats.E4M3)):
        got = formats.decode_e4m3(source).tolist()
        for byte, (value, expected) in enumerate(zip(got, oracle.E4M3_TABLE)):
            if math.isnan(expected):
                assert math.isnan(value), f"0x{byte:02X} should be NaN"
            else:
                assert value == expected, f"0x{byte:02X}: got {value}, expected {expected}"
                assert math.copysign(1.0, value) == math.copysign(1.0, expected), f"sign of 0x{byte:02X}"
    nan_patterns = [b for b in range(256) if math.isnan(oracle.E4M3_TABLE[b])]
    assert nan_patterns == [0x7F, 0xFF]


@pytest.mark.parametrize("mantissa", range(1, 8))
def test_e4m3_subnormals(mantissa):
    for byte in (mantissa, 0x80 | mantissa):
        value = formats.decode_e4m3(torch.tensor([byte], dtype=torch.uint8)).item()
        assert abs(value) == mantissa * 2.0**-9
        assert oracle.e4m3_is_subnormal(byte)


def test_e4m3_max_is_448():
    assert formats.decode_e4m3(torch.tensor([0x7E, 0xFE], dtype=torch.uint8)).tolist() == [448.0, -448.0]


def test_decode_e4m3_rejects_other_dtypes():
    with pytest.raises(TypeError):
        formats.decode_e4m3(torch.zeros(2, dtype=torch.float16))


def _e4m3_midpoints() -> list[float]:
    positives = [oracle.E4M3_TABLE[b] for b in range(0x7F)]
    return [(low + high) / 2 for low, high in itertools.pairwise(positives)]


def test_encode_e4m3_matches_oracle_at_every_value_and_midpoint():
    exact = [v for v in oracle.E4M3_TABLE if not math.isnan(v)]
    mids = _e4m3_midpoints()
    values = exact + mids + [-m for m in mids] + [2.0**-11, 2.0**-10, 3 * 2.0**-11, 1e-30]
    got = formats.encode_e4m3(torch.tensor(values, dtype=torch.float32)).view(torch.uint8).tolist()
    expected = [oracle.e4m3_nearest(v) for v in values]
    bad = [(v, g, e) for v, g, e in zip(values, got, expected) if g != e and not (g & 0x7F == e & 0x7F == 0)]
    assert not bad, f"value, got, expected: {bad[:5]}"


def test_encode_e4m3_saturates_and_keeps_nan():
    got = formats.encode_e4m3(torch.tensor([448.0, 460.0, 1000.0, math.inf, -1e9, math.nan]))
    assert got.view(torch.uint8).tolist()[:5] == [0x7E, 0x7E, 0x7E, 0x7E, 0xFE]
    assert math.isnan(formats.decode_e4m3(got[5:]).item())


def test_round_to_fp16_rounds_once():
    """float64 -> fp16 in one rounding: numpy converts directly, torch goes through float32."""
    import numpy as np

    from reference.formats import round_to_fp16

    values = torch.randn(200_000, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 100
    expected = torch.from_numpy(values.numpy().astype(np.float16))
    assert torch.equal(round_to_fp16(values), expected)
    assert not torch.equal(values.to(torch.float16), expected)  # the double rounding this avoids


# --- e8m0 (MXFP8 scales) ----------------------------------------------------------------------


def test_decode_all_256_e8m0_patterns():
    every = torch.arange(256, dtype=torch.uint8)
    for source in (every, every.view(formats.E8M0)):
        got = formats.decode_e8m0(source).tolist()
        assert got[:255] == list(oracle_fp8.E8M0_TABLE[:255])
        assert math.isnan(got[255]) and math.isnan(oracle_fp8.E8M0_TABLE[255])
    assert oracle_fp8.E8M0_TABLE[0] == 2.0**-127 and oracle_fp8.E8M0_TABLE[127] == 1.0
    assert oracle_fp8.E8M0_TABLE[254] == 2.0**127


def test_decode_e8m0_rejects_other_dtypes():
    with pytest.raises(TypeError):
        formats.decode_e8m0(torch.zeros(2, dtype=formats.E4M3))


def test_encode_e8m0_rounds_up_to_a_power_of_two():
    powers = [2.0**e for e in range(-127, 128)]
    nudged = [p * f for p in powers[1:-1] for f in (1 - 2**-40, 1 + 2**-40, 1.5)]
    values = powers + nudged + [0.0, 1e-300, 2.0**-140, 2.0**127 * 1.5, 1e300, -3.0, math.inf, -math.inf, math.nan]
    got = formats.encode_e8m0(torch.tensor(values, dtype=torch.float64)).view(torch.uint8).tolist()
    assert got == [oracle_fp8.e8m0_round_up(v) for v in values]
    assert formats.encode_e8m0(torch.tensor([448.0 / 448, 449.0 / 448])).view(torch.uint8).tolist() == [127, 128]


# --- single rounding to fp16 and bf16 ---------------------------------------------------------


def _bf16_midpoints(count: int) -> torch.Tensor:
    """Exact midpoints between neighbouring bf16 values (and one float64 ulp either side)."""
    gen = torch.Generator().manual_seed(5)
    bits = torch.randint(0, 0x7F7F, (count,), generator=gen, dtype=torch.int32).to(torch.int16)
    low = bits.view(torch.bfloat16).double()
    high = (bits + 1).view(torch.bfloat16).double()
    mid = (low + high) / 2
    return torch.cat([mid, torch.nextafter(mid, high), torch.nextafter(mid, low), -mid])


def test_round_to_bf16_rounds_once_as_the_oracle_says():
    gen = torch.Generator().manual_seed(4)
    random = torch.randn(20_000, dtype=torch.float64, generator=gen) * torch.exp2(
        torch.randint(-140, 128, (20_000,), generator=gen).double()
    )
    edges = torch.tensor([0.0, -0.0, 3.3895313892515355e38, 3.4e38, 1e39, 2.0**-133, 2.0**-134, 2.0**-150],
                         dtype=torch.float64)
    values = torch.cat([random, _bf16_midpoints(5000), edges])
    got = formats.round_to_bf16(values)
    expected = oracle_fp8.to_bf16(values)
    assert got.dtype == torch.bfloat16
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16))
    assert not torch.equal(values.to(torch.bfloat16).view(torch.int16), expected.view(torch.int16)), (
        "the double rounding this avoids"
    )


def test_round_once_takes_fp16_and_bf16_only():
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        formats.round_once(torch.zeros(2, dtype=torch.float64), torch.float32)
    single = torch.tensor([1.0 + 2**-9], dtype=torch.float32)
    assert formats.round_to_bf16(single).item() == single.to(torch.bfloat16).item()
