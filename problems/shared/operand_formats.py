"""The operand formats the problems draw, as data: element bytes, block shape, scale format.

A problem names its operands' format (``NVFP4``, ``MXFP8``, ``FP8_1X128``, ``FP8_128X128``);
``problems/shared/blockscaled.py`` draws any of them the same way: the element bytes from the
operand's stream, one or two words per scale from its ``"sf"`` stream. What differs between
formats is here and only here:

- elements: NVFP4 bytes are uniform (all 16 e2m1 codes in both nibbles); e4m3 bytes are uniform
  except the two NaN patterns (0x7F, 0xFF), which become the zero of the same sign, so every
  finite e4m3 value appears (subnormals and -0 included) and no NaN does;
- scales: e4m3 and e8m0 through the inverse-CDF table of ``problems/shared/counter_rng.py`` (the value
  nearest 2^u, u uniform on the task's ``scale_log2`` range); fp32 scales as 2^e * (1 + f),
  e uniform over the integers of [log2_min, log2_max), f uniform over the 2^23 fp32 mantissas,
  built from the bit fields so that the CPU and CUDA produce the same bits.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from problems.shared.counter_rng import WORD_MASK, ScaleTable
from reference.formats import BLOCK_SIZE, E4M3, E8M0, FP4
from reference.fp8 import ACTIVATION_BLOCK, MX_BLOCK, WEIGHT_BLOCK

FLOAT32_MANTISSA_BITS = 23
FLOAT32_BIAS = 127


@dataclass(frozen=True)
class OperandFormat:
    """How one operand's elements and block scales are stored and drawn."""

    name: str
    element_dtype: torch.dtype
    elements_per_byte: int
    block: tuple[int, int]  # (rows, K elements) that share one scale
    scale_dtype: torch.dtype

    @property
    def words_per_scale(self) -> int:
        """fp32 scales take two words (exponent, mantissa); table formats one."""
        return 2 if self.scale_dtype == torch.float32 else 1

    def element_bytes(self, raw: torch.Tensor) -> torch.Tensor:
        """Uniform bytes -> this format's element bytes (e4m3: NaN patterns -> signed zero)."""
        if self.element_dtype != E4M3:
            return raw
        return torch.where(raw & 0x7F == 0x7F, raw & 0x80, raw)

    def scales(self, words: list[torch.Tensor], shapes: list[tuple[int, ...]], log2_min: float,
               log2_max: float) -> list[torch.Tensor]:
        """Scales of each shape from ``words_per_scale * prod(shape)`` words (own storage); a table
        format's codes for all of them in one kernel launch on CUDA."""
        if self.scale_dtype == torch.float32:
            return [float32_scales(w, shape, log2_min, log2_max) for w, shape in zip(words, shapes)]
        return scale_table(log2_min, log2_max, self.scale_dtype).scales(words, shapes)


NVFP4 = OperandFormat("nvfp4", FP4, 2, (1, BLOCK_SIZE), E4M3)
MXFP8 = OperandFormat("mxfp8", E4M3, 1, MX_BLOCK, E8M0)
FP8_1X128 = OperandFormat("fp8_1x128", E4M3, 1, ACTIVATION_BLOCK, torch.float32)
FP8_128X128 = OperandFormat("fp8_128x128", E4M3, 1, WEIGHT_BLOCK, torch.float32)


@functools.cache
def scale_table(log2_min: float, log2_max: float, dtype: torch.dtype) -> ScaleTable:
    """The inverse-CDF table of one distribution and scale format, built once per process."""
    return ScaleTable.build(log2_min, log2_max, dtype)


def float32_scales(words: torch.Tensor, shape: tuple[int, ...], log2_min: float, log2_max: float) -> torch.Tensor:
    """fp32 scales 2^e * (1 + f) of ``shape`` from 2 * prod(shape) int32 words.

    Scale i takes its exponent from word i and its mantissa from word count + i:
    e = log2_min + floor(r * n / 2^32) with r the word's unsigned value and n = log2_max - log2_min
    (integers; the bias of this multiply-high against exact uniformity is below n / 2^32), and
    f's 23 bits are the low bits of the second word. Integer arithmetic and one reinterpretation
    of the bits: the same on every device.
    """
    if log2_min != math.floor(log2_min) or log2_max != math.floor(log2_max) or not log2_min < log2_max:
        raise ValueError(f"fp32 scales take an integer scale_log2 range [min, max), got [{log2_min}, {log2_max}]")
    low, span = int(log2_min), int(log2_max - log2_min)
    if low < 1 - FLOAT32_BIAS or low + span > FLOAT32_BIAS + 1:
        raise ValueError(f"scale_log2 [{log2_min}, {log2_max}] leaves fp32's normal range")
    count = math.prod(shape)
    if words.numel() != 2 * count:
        raise ValueError(f"{math.prod(shape)} fp32 scales take {2 * count} words, got {words.numel()}")
    unsigned = words.to(torch.int64) & WORD_MASK
    exponent = (unsigned[:count] * span >> 32) + (low + FLOAT32_BIAS)
    mantissa = unsigned[count:] & ((1 << FLOAT32_MANTISSA_BITS) - 1)
    bits = (exponent << FLOAT32_MANTISSA_BITS) | mantissa
    return bits.to(torch.int32).view(torch.float32).reshape(shape)
