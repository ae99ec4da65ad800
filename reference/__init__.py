"""NVFP4: the format, its scale layouts and reference products. No harness logic lives here."""

from reference.formats import (
    BLOCK_SIZE,
    E2M1_VALUES,
    E4M3,
    FP4,
    as_bytes,
    as_fp4,
    decode_e2m1,
    decode_e4m3,
    encode_e2m1,
    encode_e4m3,
    pack_nibbles,
    round_to_fp16,
    unpack_nibbles,
)
from reference.layouts import ceil_div, from_blocked, from_permuted, to_blocked, to_permuted
from reference.ops import block_scaled_mm, pick_backend, silu_mul
from reference.quantize import dequantize, quantize

__all__ = [
    "BLOCK_SIZE",
    "E2M1_VALUES",
    "E4M3",
    "FP4",
    "as_bytes",
    "as_fp4",
    "block_scaled_mm",
    "ceil_div",
    "decode_e2m1",
    "decode_e4m3",
    "dequantize",
    "encode_e2m1",
    "encode_e4m3",
    "from_blocked",
    "from_permuted",
    "pack_nibbles",
    "pick_backend",
    "quantize",
    "round_to_fp16",
    "silu_mul",
    "to_blocked",
    "to_permuted",
    "unpack_nibbles",
]
