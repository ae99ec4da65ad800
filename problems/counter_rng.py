"""A counter-based random generator that gives the same bits on the CPU and on CUDA.

Word ``i`` of stream ``name`` under seed ``S`` is a pure function of (S, name, i):

    k0, k1 = the two 32-bit halves of blake2b("S:name", 8 bytes), little-endian (on the host)
    word_i = mix32(mix32(i ^ k0) ^ k1)

``mix32`` is Chris Wellons' "lowbias32" integer hash (xorshift 16, multiply 0x7feb352d,
xorshift 15, multiply 0x846ca68b, xorshift 16), a bijection of 32-bit integers. It is computed
on int64 tensors holding values in [0, 2^32): shifts, xor and ``& 0xFFFFFFFF`` are exact, and
each multiply uses the constant's two's-complement twin below 2^31 in magnitude (c - 2^32 when
c >= 2^31, the same value mod 2^32), so no product leaves int64's range. No float operation
touches the bits, so every device that implements int64 arithmetic exactly (CPU and CUDA torch
do) produces identical words, and the words are generated where they are used: no host draw
and copy.

Bytes are the words' little-endian bytes in order; scales come from one word each through an
integer inverse-CDF table (:class:`ScaleTable`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass

import torch

from reference.formats import E4M3, decode_e4m3

WORD_MASK = 0xFFFFFFFF
WORD_RANGE = 1 << 32
MAX_WORDS = WORD_RANGE
"""Counters are 32-bit: one stream holds at most 2^32 words (16 GiB)."""

_MULTIPLIERS = (0x7FEB352D, 0x846CA68B)
_SHIFTS = (16, 15, 16)


def _int64_twin(constant: int) -> int:
    """The value congruent to ``constant`` mod 2^32 with magnitude below 2^31."""
    return constant - WORD_RANGE if constant >= 1 << 31 else constant


def _mul32(x: torch.Tensor, constant: int) -> torch.Tensor:
    """(x * constant) mod 2^32, in place, for x in [0, 2^32): |product| < 2^63, so exact."""
    return x.mul_(_int64_twin(constant)).bitwise_and_(WORD_MASK)


def mix32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 on an int64 tensor of 32-bit values, in place (returns ``x``)."""
    x.bitwise_xor_(x >> _SHIFTS[0])
    _mul32(x, _MULTIPLIERS[0])
    x.bitwise_xor_(x >> _SHIFTS[1])
    _mul32(x, _MULTIPLIERS[1])
    return x.bitwise_xor_(x >> _SHIFTS[2])


def stream_keys(seed: int, name: str) -> tuple[int, int]:
    """The two 32-bit keys of stream ``name`` under ``seed``: host-side, exact, device-free."""
    digest = hashlib.blake2b(f"{int(seed)}:{name}".encode(), digest_size=8).digest()
    key = int.from_bytes(digest, "little")
    return key & WORD_MASK, key >> 32


def random_words(seed: int, name: str, count: int, device: torch.device | str) -> torch.Tensor:
    """Words 0..count-1 of a stream: int64 tensor of values in [0, 2^32) on ``device``."""
    if count > MAX_WORDS:
        raise ValueError(f"a stream holds at most {MAX_WORDS} 32-bit words, {count} were asked for")
    k0, k1 = stream_keys(seed, name)
    x = torch.arange(count, dtype=torch.int64, device=device).bitwise_xor_(k0)
    return mix32(mix32(x).bitwise_xor_(k1))


def random_bytes(seed: int, name: str, shape: tuple[int, ...], device: torch.device | str) -> torch.Tensor:
    """Uniform bytes (uint8, ``shape``): the little-endian bytes of the stream's words in order."""
    count = math.prod(shape)
    words = random_words(seed, name, -(-count // 4), device)
    # Into int32's range without overflow (x - 2^32 when x >= 2^31), then reinterpret: CPU and
    # CUDA are both little-endian, so byte 4i + j is bits 8j..8j+7 of word i on either.
    signed = words.sub_((words >> 31) << 32).to(torch.int32)
    return signed.view(torch.uint8)[:count].reshape(shape)


@dataclass(frozen=True)
class ScaleTable:
    """Integer inverse CDF of e4m3(2**u), u uniform on [log2_min, log2_max].

    Word r (uniform on [0, 2^32)) stands for u_r = log2_min + (log2_max - log2_min) * (r + 1/2) / 2^32,
    and the scale is the e4m3 value nearest 2**u_r (an exact midpoint, which no r hits for the
    shipped ranges, would round up). ``thresholds[j]`` counts the words whose
    2**u_r lies below the midpoint between positive e4m3 values j and j+1 (codes j+1 and j+2),
    so the code of word r is 1 + (number of thresholds <= r): an exact integer search on any
    device. The thresholds are computed once on the host in float64.
    """

    log2_min: float
    log2_max: float
    thresholds: tuple[int, ...]

    @classmethod
    def build(cls, log2_min: float, log2_max: float) -> ScaleTable:
        if not log2_min < log2_max:
            raise ValueError(f"scale_log2 must be an increasing [min, max] pair, got [{log2_min}, {log2_max}]")
        values = decode_e4m3(torch.arange(1, 0x7F, dtype=torch.uint8)).double().tolist()  # codes 1..126
        if not (values[0] <= 2.0**log2_min and 2.0**log2_max <= values[-1]):
            raise ValueError(f"scale_log2 [{log2_min}, {log2_max}] leaves e4m3's range [2^-9, 448]")
        span = log2_max - log2_min
        thresholds = []
        for low, high in itertools.pairwise(values):
            # Count of integers r >= 0 with r + 1/2 < WORD_RANGE * (log2(mid) - log2_min) / span.
            position = WORD_RANGE * (math.log2((low + high) / 2) - log2_min) / span
            thresholds.append(min(max(math.ceil(position - 0.5), 0), WORD_RANGE))
        return cls(float(log2_min), float(log2_max), tuple(thresholds))

    def codes(self, words: torch.Tensor) -> torch.Tensor:
        """e4m3 codes (uint8) of int64 words in [0, 2^32)."""
        table = torch.tensor(self.thresholds, dtype=torch.int64, device=words.device)
        return torch.searchsorted(table, words, right=True).add_(1).to(torch.uint8)


def random_scales(
    seed: int, name: str, shape: tuple[int, ...], table: ScaleTable, device: torch.device | str
) -> torch.Tensor:
    """e4m3 scales of ``shape`` from one word each, distributed as ``table`` says."""
    words = random_words(seed, name, math.prod(shape), device)
    return table.codes(words).reshape(shape).view(E4M3)
