"""The block-scaled formats (NVFP4, MXFP8, blockwise fp8), scale layouts and reference products.

No harness logic lives here.
"""

from reference.formats import (
    BLOCK_SIZE,
    E2M1_VALUES,
    E4M3,
    E8M0,
    FP4,
    as_bytes,
    as_fp4,
    decode_e2m1,
    decode_e4m3,
    decode_e8m0,
    encode_e2m1,
    encode_e4m3,
    encode_e8m0,
    pack_nibbles,
    round_to_bf16,
    round_to_fp16,
    unpack_nibbles,
)
from reference.fp8 import dequantize_blockwise, dequantize_mxfp8, quantize_blockwise, quantize_mxfp8
from reference.layouts import ceil_div, from_blocked, from_permuted, to_blocked, to_permuted
from reference.ops import block_scaled_mm, blockwise_fp8_mm, mxfp8_mm, pick_backend, silu_mul
from reference.quantize import dequantize, quantize

__all__ = [
    "BLOCK_SIZE",
    "E2M1_VALUES",
    "E4M3",
    "E8M0",
    "FP4",
    "as_bytes",
    "as_fp4",
    "block_scaled_mm",
    "blockwise_fp8_mm",
    "ceil_div",
    "decode_e2m1",
    "decode_e4m3",
    "decode_e8m0",
    "dequantize",
    "dequantize_blockwise",
    "dequantize_mxfp8",
    "encode_e2m1",
    "encode_e4m3",
    "encode_e8m0",
    "from_blocked",
    "from_permuted",
    "mxfp8_mm",
    "pack_nibbles",
    "pick_backend",
    "quantize",
    "quantize_blockwise",
    "quantize_mxfp8",
    "round_to_bf16",
    "round_to_fp16",
    "silu_mul",
    "to_blocked",
    "to_permuted",
    "unpack_nibbles",
]
