#!POPCORN leaderboard nvfp4_gemv
#!POPCORN author harness-baselines
"""NVFP4 batched GEMV in CuTe DSL, for Hopper (sm_90) and later.

c[:, 0, l] = A[:, :, l] @ B[0, :, l] in fp16. One warp owns ROWS_PER_WARP rows; its lanes walk K
in 16-byte pieces (32 fp4 values, two scale blocks), lane j taking pieces j, j + 32, ..., so each
load instruction of the warp reads 512 contiguous bytes of a row; the K loop is unrolled twice, so
two steps of loads are in flight. The vector piece is decoded once and reused for all rows of the
warp; the partial sums meet in a butterfly shuffle at the end.

Why it is fast enough: every byte of A is read once with 128-bit loads, and the decode is packed
integer work, about four instructions per byte. e2m1 codes become signed small integers (twice
the value: 0, 1, 2, 3, 4, 6, 8, 12) through `prmt` used as an 8-entry byte table, whose sign-fill
mode zeroes the negative codes; a second `prmt` on the sign-flipped codes yields the negatives.
`dp4a` multiplies four code pairs at a time; a 16-element block sum is an exact integer, times
the A scale decoded to an exact integer (e4m3 = n * 2**-9) in integer arithmetic, then one fp32
multiply-add by the B scale factor. All sums are fp32 or exact integers.

Why software decoding: CuTe DSL lowers fp4 `.to(Float32)` to PTX `cvt ... e2m1x2`, which ptxas
(and libNVVM) reject on sm_90a (it needs sm_100a/sm_120a). The fp4x2 bytes are read as Int32 words
instead and decoded with `prmt`, which every sm_90 runs.

Each (M, K, L, strides) gets one cute.compile; the compiled function is cached, so the JIT cost
(0.3 to 1.7 s per shape on the H100) lands in the first call. Needs `pip install '.[cute]'`
(nvidia-cutlass-dsl). e4m3 NaN scales (0x7F, 0xFF) are not special-cased.
"""

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import torch
from cutlass import Int32, Uint16
from cutlass._mlir.dialects import llvm
from cutlass.cute.runtime import make_ptr
from cutlass.cutlass_dsl import T, dsl_user_op
from task import input_t, output_t

WARPS_PER_CTA = 4
ROWS_PER_WARP = 2
ROWS_PER_CTA = WARPS_PER_CTA * ROWS_PER_WARP
STEP_UNROLL = 2  # unroll factor of the loop over K steps: two steps of loads in flight
PIECE_BYTES = 16  # one 128-bit load: 32 fp4 values, two 16-element scale blocks
PIECE_WORDS = PIECE_BYTES // 4

# prmt byte table: e2m1 magnitude code m (0..7) -> 2 * value (0, 1, 2, 3, 4, 6, 8, 12).
TABLE_LO = 0x03020100
TABLE_HI = 0x0C080604
SIGN_BITS = -0x77777778  # 0x88888888 as int32: bit 3 of every nibble
BYTE_MSB = -0x7F7F7F80  # 0x80808080 as int32
# Block sum = isum * (A scale int) * (B scale int) * 2**-9 * 2**-9 * 2**-2 (codes are twice the value).
INT_PRODUCT_SCALE = 2.0**-20


def _asm_i32(text: str, operands: list, loc=None, ip=None) -> Int32:
    values = [Int32(v).ir_value(loc=loc, ip=ip) for v in operands]
    constraints = ",".join(["=r"] + ["r"] * len(values))
    return Int32(
        llvm.inline_asm(
            T.i32(),
            values,
            text,
            constraints,
            has_side_effects=False,
            is_align_stack=False,
            asm_dialect=llvm.AsmDialect.AD_ATT,
            loc=loc,
            ip=ip,
        )
    )


@dsl_user_op
def prmt(lo, hi, selector, *, loc=None, ip=None) -> Int32:
    """Bytes of (hi:lo) picked by the four low nibbles of selector; bit 3 of a nibble sign-fills."""
    return _asm_i32("prmt.b32 $0, $1, $2, $3;", [lo, hi, selector], loc=loc, ip=ip)


@dsl_user_op
def dp4a(a, b, c, *, loc=None, ip=None) -> Int32:
    """c + the dot product of the four signed bytes of a and b."""
    return _asm_i32("dp4a.s32.s32 $0, $1, $2, $3;", [a, b, c], loc=loc, ip=ip)


def e4m3_as_int(byte: Int32) -> Int32:
    """An e4m3 byte as the exact integer n with value n * 2**-9 (|n| <= 15 << 14)."""
    exponent = (byte >> 3) & 0xF
    normal = cutlass.min(exponent, 1)
    magnitude = ((byte & 7) | (normal << 3)) << (exponent - normal)
    negative = (byte >> 7) & 1
    return (magnitude ^ (0 - negative)) + negative


def signed_codes(word: Int32) -> tuple:
    """Eight e2m1 codes -> two words of four signed bytes (twice the value), in element order."""
    flipped = word ^ SIGN_BITS
    out = []
    for half in range(2):
        shift = 16 * half
        positive = prmt(TABLE_LO, TABLE_HI, word >> shift)
        negative = prmt(TABLE_LO, TABLE_HI, flipped >> shift)
        # Byte-wise positive - negative; no byte borrows since every byte is below 128.
        out.append(((positive | BYTE_MSB) - negative) ^ BYTE_MSB)
    return out[0], out[1]


@cute.kernel
def gemv_kernel(
    mA: cute.Tensor,  # (PIECE_WORDS, pieces, M, L) Int32
    mSA: cute.Tensor,  # (pieces, M, L) Uint16: the two scale bytes of a piece
    mB: cute.Tensor,  # (PIECE_WORDS, pieces, L) Int32: row 0 of b
    mSB: cute.Tensor,  # (pieces, L) Uint16
    mC: cute.Tensor,  # (M, L) Float16
    m: cutlass.Constexpr[int],
    pieces: cutlass.Constexpr[int],
):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, batch, _ = cute.arch.block_idx()
    lane = tidx % 32
    first_row = (bidx * WARPS_PER_CTA + tidx // 32) * ROWS_PER_WARP
    # Bounds checks only where the shape needs them (the contest's shapes need none).
    ragged_rows = m % ROWS_PER_CTA != 0
    ragged_k = pieces % 32 != 0

    acc = cute.make_rmem_tensor((ROWS_PER_WARP,), cutlass.Float32)
    for r in cutlass.range_constexpr(ROWS_PER_WARP):
        acc[r] = cutlass.Float32(0.0)
    a_words = cute.make_rmem_tensor((PIECE_WORDS, ROWS_PER_WARP), Int32)
    a_scales = cute.make_rmem_tensor((ROWS_PER_WARP,), Int32)
    b_words = cute.make_rmem_tensor((PIECE_WORDS,), Int32)
    b_signed = cute.make_rmem_tensor((2 * PIECE_WORDS,), Int32)

    for step in cutlass.range((pieces + 31) // 32, unroll=STEP_UNROLL):
        piece = step * 32 + lane
        if piece < pieces or not ragged_k:
            # All loads first (every row of the warp, then the vector), so they are in flight together.
            for r in cutlass.range_constexpr(ROWS_PER_WARP):
                row = first_row + r
                if row < m or not ragged_rows:
                    cute.autovec_copy(mA[None, piece, row, batch], a_words[None, r])
                    a_scales[r] = Int32(mSA[piece, row, batch])
            cute.autovec_copy(mB[None, piece, batch], b_words)
            sb = Int32(mSB[piece, batch])

            for w in cutlass.range_constexpr(PIECE_WORDS):
                lo, hi = signed_codes(b_words[w])
                b_signed[2 * w] = lo
                b_signed[2 * w + 1] = hi
            b_factors = (
                cutlass.Float32(e4m3_as_int(sb & 0xFF)) * INT_PRODUCT_SCALE,
                cutlass.Float32(e4m3_as_int((sb >> 8) & 0xFF)) * INT_PRODUCT_SCALE,
            )
            for r in cutlass.range_constexpr(ROWS_PER_WARP):
                row = first_row + r
                if row < m or not ragged_rows:
                    total = acc[r]
                    for block in cutlass.range_constexpr(2):
                        pos = Int32(0)
                        neg = Int32(0)
                        for w in cutlass.range_constexpr(2 * block, 2 * block + 2):
                            word = a_words[w, r]
                            flipped = word ^ SIGN_BITS
                            for half in cutlass.range_constexpr(2):
                                vector = b_signed[2 * w + half]
                                pos = dp4a(prmt(TABLE_LO, TABLE_HI, word >> (16 * half)), vector, pos)
                                neg = dp4a(prmt(TABLE_LO, TABLE_HI, flipped >> (16 * half)), vector, neg)
                        scale_a = e4m3_as_int((a_scales[r] >> (8 * block)) & 0xFF)
                        total = total + cutlass.Float32((pos - neg) * scale_a) * b_factors[block]
                    acc[r] = total

    for r in cutlass.range_constexpr(ROWS_PER_WARP):
        value = acc[r]
        for offset in cutlass.range_constexpr(5):
            value = value + cute.arch.shuffle_sync_bfly(value, offset=16 >> offset)
        row = first_row + r
        if lane == 0 and row < m:
            mC[row, batch] = value.to(cutlass.Float16)


@cute.jit
def gemv_host(
    a_ptr: cute.Pointer,
    sfa_ptr: cute.Pointer,
    b_ptr: cute.Pointer,
    sfb_ptr: cute.Pointer,
    c_ptr: cute.Pointer,
    stream: cuda.CUstream,
    m: cutlass.Constexpr[int],
    k: cutlass.Constexpr[int],
    l: cutlass.Constexpr[int],
    strides: cutlass.Constexpr[tuple],
):
    """strides (in elements of each pointer's type): a (row, batch) in Int32 words, sfa (row, batch)
    in Uint16, b batch in words, sfb batch in Uint16, c (row, batch) in fp16."""
    a_row, a_batch, sfa_row, sfa_batch, b_batch, sfb_batch, c_row, c_batch = strides
    pieces = k // (2 * PIECE_BYTES)
    mA = cute.make_tensor(a_ptr, cute.make_layout((PIECE_WORDS, pieces, m, l), stride=(1, PIECE_WORDS, a_row, a_batch)))
    mSA = cute.make_tensor(sfa_ptr, cute.make_layout((pieces, m, l), stride=(1, sfa_row, sfa_batch)))
    mB = cute.make_tensor(b_ptr, cute.make_layout((PIECE_WORDS, pieces, l), stride=(1, PIECE_WORDS, b_batch)))
    mSB = cute.make_tensor(sfb_ptr, cute.make_layout((pieces, l), stride=(1, sfb_batch)))
    mC = cute.make_tensor(c_ptr, cute.make_layout((m, l), stride=(c_row, c_batch)))
    gemv_kernel(mA, mSA, mB, mSB, mC, m, pieces).launch(
        grid=((m + ROWS_PER_CTA - 1) // ROWS_PER_CTA, l, 1), block=(32 * WARPS_PER_CTA, 1, 1), stream=stream
    )


_compiled: dict = {}


def _pointers(a, sfa, b, sfb, c) -> list:
    return [
        make_ptr(Int32, a.data_ptr(), cute.AddressSpace.gmem, assumed_align=16),
        make_ptr(Uint16, sfa.data_ptr(), cute.AddressSpace.gmem, assumed_align=2),
        make_ptr(Int32, b.data_ptr(), cute.AddressSpace.gmem, assumed_align=16),
        make_ptr(Uint16, sfb.data_ptr(), cute.AddressSpace.gmem, assumed_align=2),
        make_ptr(cutlass.Float16, c.data_ptr(), cute.AddressSpace.gmem, assumed_align=2),
    ]


def _compatible(t: torch.Tensor, k_dim: int, align: int) -> torch.Tensor:
    """t (uint8) with unit stride along k_dim and every other stride and the address a multiple of
    align bytes; a copy with K innermost when the caller's layout is not the contest's."""
    others = [s for d, s in enumerate(t.stride()) if d != k_dim]
    if t.stride(k_dim) == 1 and t.data_ptr() % align == 0 and all(s % align == 0 for s in others):
        return t
    return t.movedim(k_dim, -1).contiguous().movedim(-1, k_dim)


def custom_kernel(data: input_t) -> output_t:
    a, b, sfa, sfb, _, _, c = data
    if not a.is_cuda:
        raise RuntimeError("cute_gemv runs on CUDA GPUs only (sm_90 or later)")
    m, half_k, l = a.shape
    k = 2 * half_k
    a8 = _compatible(a.view(torch.uint8), 1, PIECE_BYTES)  # (M, K/2, L)
    sfa8 = _compatible(sfa.view(torch.uint8), 1, 2)  # (M, K/16, L)
    b8 = _compatible(b[0].view(torch.uint8), 0, PIECE_BYTES)  # (K/2, L): row 0 is the vector
    sfb8 = _compatible(sfb[0].view(torch.uint8), 0, 2)  # (K/16, L)
    # Element strides for the pointer types: Int32 words for a/b, Uint16 for scales, fp16 for c.
    strides = (
        a8.stride(0) // 4,
        a8.stride(2) // 4,
        sfa8.stride(0) // 2,
        sfa8.stride(2) // 2,
        b8.stride(1) // 4,
        sfb8.stride(1) // 2,
        c.stride(0),
        c.stride(2),
    )
    key = (m, k, l, strides)
    pointers = _pointers(a8, sfa8, b8, sfb8, c)
    stream = cuda.CUstream(torch.cuda.current_stream(c.device).cuda_stream)
    compiled = _compiled.get(key)
    if compiled is None:
        compiled = cute.compile(gemv_host, *pointers, stream, m, k, l, strides)
        _compiled[key] = compiled
    compiled(*pointers, stream)
    return c
