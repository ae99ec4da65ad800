#!POPCORN leaderboard nvfp4_gemv
#!POPCORN author harness-baselines
"""NVFP4 batched GEMV in Triton, decoding e2m1 and e4m3 inside the kernel (Hopper and newer).

What it does: one program per BM rows of A (and per batch l) streams its rows along K, one
16-element scale block (8 bytes, one int64) per thread and step, and keeps fp32 partial sums
per (row, block column) until one final row reduction. Nothing dequantized goes to memory.

Why it is fast: a GEMV reads every byte of A once, so it stays near the DRAM limit only if the
decode costs a few instructions per byte. On the GPU each block goes through one PTX snippet
(``tl.inline_asm_elementwise``, ``_block_dot_i8``) that works on whole 32-bit words (8 codes):
- ``prmt`` with the codes as byte selectors looks up 2 * |e2m1| in an 8-byte table, 4 codes per
  instruction; a selector's sign bit makes prmt emit 0, so the codes give the positive part
  and the codes with flipped sign bits (one xor per word) the negative part, A = pos - neg;
- ``dp4a`` multiplies them with the vector's signed and negated int8 codes (decoded once per
  column and shared by all rows): the block's dot product, exact in int32;
- one int-to-float conversion and the row's e4m3 scale (``cvt.rn.f16x2.e4m3x2``) finish it.
That is about 40 SASS instructions per 8-byte block, half of a shift-and-mask fp16 decode (the
``decode="f16"`` variant, kept for comparison). The vector's scale and the 1/4 of the doubled
codes fold into one fp32 factor per block column.
Measured on the H100 (docs/baselines.md): 57% of the Hopper speed of light, geomean of the three
contest shapes (52-70% per shape); the limit is latency and occupancy, not the decode.
Under the Triton CPU interpreter (``TRITON_INTERPRET=1``, no PTX) plain Triton computes the same
block sums: nibbles decoded with the fp16 bit trick ((n & 7) << 9 | (n & 8) << 12 is
e2m1(n) * 2^-14), one element at a time.
"""

import os

import torch
import triton
import triton.language as tl
from task import input_t, output_t

# 2^14 undoes the e2m1 bit trick's 2^-14; 2^8 undoes the e4m3 trick's 2^-8 (fallback only).
_E2M1_TRICK = 16384.0
_E4M3_TRICK = 256.0


@triton.jit
def _e2m1_to_f32(code):
    """4-bit codes (any int type) -> exact e2m1 values as fp32, via fp16 bits (e2m1 * 2^-14)."""
    code = code.to(tl.int32)
    bits = ((code & 7) << 9) | ((code & 8) << 12)
    return bits.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32) * 16384.0


@triton.jit
def _e4m3_to_f32(byte):
    """e4m3 bytes -> fp32, exact: fp16 bits ((x & 0x7F) << 7) | sign are e4m3(x) * 2^-8."""
    byte = byte.to(tl.int32)
    bits = ((byte & 0x7F) << 7) | ((byte & 0x80) << 8)
    return bits.to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32) * 256.0


@triton.jit
def _vector_pairs(word):
    """One 32-bit word of the vector (8 codes) -> four f16x2 registers of exact e2m1 values.

    Register j holds codes j (low half) and j + 4 (high half), the pairing ``_block_dot`` uses.
    """
    return tl.inline_asm_elementwise(
        asm="""
        {
        .reg .b32 x, y, big;
        mov.b32 big, 0x74007400;
        shl.b32 x, $4, 9;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, $4, 12; and.b32 y, y, 0x80008000; or.b32 x, x, y; mul.rn.f16x2 $0, x, big;
        shl.b32 x, $4, 5;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, $4, 8;  and.b32 y, y, 0x80008000; or.b32 x, x, y; mul.rn.f16x2 $1, x, big;
        shl.b32 x, $4, 1;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, $4, 4;  and.b32 y, y, 0x80008000; or.b32 x, x, y; mul.rn.f16x2 $2, x, big;
        shr.b32 x, $4, 3;  and.b32 x, x, 0x0E000E00;
        and.b32 y, $4, 0x80008000; or.b32 x, x, y; mul.rn.f16x2 $3, x, big;
        }
        """,
        constraints="=r,=r,=r,=r,r",
        args=[word],
        dtype=(tl.int32, tl.int32, tl.int32, tl.int32),
        is_pure=True,
        pack=1,
    )


@triton.jit
def _block_dot(block, p0, p1, p2, p3, p4, p5, p6, p7, scale):
    """sum_k e2m1(A[k]) * e2m1(b[k]) * e4m3(scale) * 2^-14 over one 16-element block of A.

    ``block`` is the block's 8 bytes as int64; p0..p7 are the vector's f16x2 pairs of the same
    block (low word: p0..p3, high word: p4..p7); ``scale`` is A's e4m3 byte as int32.
    """
    return tl.inline_asm_elementwise(
        asm="""
        {
        .reg .b32 lo, hi, x, y, acc;
        .reg .b16 h0, h1;
        .reg .f32 f0, f1;
        mov.b64 {lo, hi}, $1;
        shl.b32 x, lo, 9;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, lo, 12; and.b32 y, y, 0x80008000; or.b32 x, x, y; mul.rn.f16x2 acc, x, $2;
        shl.b32 x, lo, 5;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, lo, 8;  and.b32 y, y, 0x80008000; or.b32 x, x, y; fma.rn.f16x2 acc, x, $3, acc;
        shl.b32 x, lo, 1;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, lo, 4;  and.b32 y, y, 0x80008000; or.b32 x, x, y; fma.rn.f16x2 acc, x, $4, acc;
        shr.b32 x, lo, 3;  and.b32 x, x, 0x0E000E00;
        and.b32 y, lo, 0x80008000; or.b32 x, x, y; fma.rn.f16x2 acc, x, $5, acc;
        shl.b32 x, hi, 9;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, hi, 12; and.b32 y, y, 0x80008000; or.b32 x, x, y; fma.rn.f16x2 acc, x, $6, acc;
        shl.b32 x, hi, 5;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, hi, 8;  and.b32 y, y, 0x80008000; or.b32 x, x, y; fma.rn.f16x2 acc, x, $7, acc;
        shl.b32 x, hi, 1;  and.b32 x, x, 0x0E000E00;
        shl.b32 y, hi, 4;  and.b32 y, y, 0x80008000; or.b32 x, x, y; fma.rn.f16x2 acc, x, $8, acc;
        shr.b32 x, hi, 3;  and.b32 x, x, 0x0E000E00;
        and.b32 y, hi, 0x80008000; or.b32 x, x, y; fma.rn.f16x2 acc, x, $9, acc;
        mov.b32 {h0, h1}, acc;
        cvt.f32.f16 f0, h0;
        cvt.f32.f16 f1, h1;
        add.f32 f0, f0, f1;
        cvt.u16.u32 h0, $10;
        cvt.rn.f16x2.e4m3x2 x, h0;
        mov.b32 {h0, h1}, x;
        cvt.f32.f16 f1, h0;
        mul.f32 $0, f0, f1;
        }
        """,
        constraints="=r,l,r,r,r,r,r,r,r,r,r",
        args=[block, p0, p1, p2, p3, p4, p5, p6, p7, scale],
        dtype=tl.float32,
        is_pure=True,
        pack=1,
    )


@triton.jit
def _vector_i8(word, tab_lo, tab_hi):
    """One 32-bit word of the vector (8 codes) -> int8x4 words of 2 * e2m1, signed and negated.

    Returns (signed codes 0-3, signed codes 4-7, negated codes 0-3, negated codes 4-7).
    """
    return tl.inline_asm_elementwise(
        asm="""
        {
        .reg .b32 w, x, p, n, c80;
        mov.b32 c80, 0x80808080;
        mov.b32 w, $4;
        xor.b32 x, w, 0x88888888;
        prmt.b32 p, $5, $6, w;
        prmt.b32 n, $5, $6, x;
        sub.u32 $0, c80, n; xor.b32 $0, $0, c80; or.b32 $0, $0, p;
        sub.u32 $2, c80, p; xor.b32 $2, $2, c80; or.b32 $2, $2, n;
        shr.b32 w, w, 16;
        shr.b32 x, x, 16;
        prmt.b32 p, $5, $6, w;
        prmt.b32 n, $5, $6, x;
        sub.u32 $1, c80, n; xor.b32 $1, $1, c80; or.b32 $1, $1, p;
        sub.u32 $3, c80, p; xor.b32 $3, $3, c80; or.b32 $3, $3, n;
        }
        """,
        constraints="=r,=r,=r,=r,r,r,r",
        args=[word, tab_lo, tab_hi],
        dtype=(tl.int32, tl.int32, tl.int32, tl.int32),
        is_pure=True,
        pack=1,
    )


@triton.jit
def _block_dot_i8(block, s0, s1, s2, s3, n0, n1, n2, n3, scale, tab_lo, tab_hi):
    """4 * sum_k e2m1(A[k]) * e2m1(b[k]) * e4m3(scale) over one 16-element block of A, via dp4a.

    ``prmt`` with the codes as selectors looks up 2 * |e2m1| in an 8-byte table; a set sign bit
    in a selector nibble yields 0 instead, so the lookup of the codes gives the positive part and
    the lookup of the codes with flipped signs the negative part: A = pos - neg, and
    A . b = dp4a(pos, b) + dp4a(neg, -b), exact in int32. s0..s3 / n0..n3 are the vector's
    signed / negated int8x4 words of the same block (low word: 0, 1; high word: 2, 3).
    """
    return tl.inline_asm_elementwise(
        asm="""
        {
        .reg .b32 lo, hi, x, p, acc;
        .reg .b16 h0, h1;
        .reg .f32 f0, f1;
        mov.b64 {lo, hi}, $1;
        xor.b32 x, lo, 0x88888888;
        prmt.b32 p, $11, $12, lo; dp4a.s32.s32 acc, p, $2, 0;
        prmt.b32 p, $11, $12, x;  dp4a.s32.s32 acc, p, $6, acc;
        shr.b32 lo, lo, 16;
        shr.b32 x, x, 16;
        prmt.b32 p, $11, $12, lo; dp4a.s32.s32 acc, p, $3, acc;
        prmt.b32 p, $11, $12, x;  dp4a.s32.s32 acc, p, $7, acc;
        xor.b32 x, hi, 0x88888888;
        prmt.b32 p, $11, $12, hi; dp4a.s32.s32 acc, p, $4, acc;
        prmt.b32 p, $11, $12, x;  dp4a.s32.s32 acc, p, $8, acc;
        shr.b32 hi, hi, 16;
        shr.b32 x, x, 16;
        prmt.b32 p, $11, $12, hi; dp4a.s32.s32 acc, p, $5, acc;
        prmt.b32 p, $11, $12, x;  dp4a.s32.s32 acc, p, $9, acc;
        cvt.rn.f32.s32 f0, acc;
        cvt.u16.u32 h0, $10;
        cvt.rn.f16x2.e4m3x2 x, h0;
        mov.b32 {h0, h1}, x;
        cvt.f32.f16 f1, h0;
        mul.f32 $0, f0, f1;
        }
        """,
        constraints="=r,l,r,r,r,r,r,r,r,r,r,r,r",
        args=[block, s0, s1, s2, s3, n0, n1, n2, n3, scale, tab_lo, tab_hi],
        dtype=tl.float32,
        is_pure=True,
        pack=1,
    )


@triton.jit
def _load_step(a_ptr, sa_ptr, b_ptr, sb_ptr, rows, row_off, vec_off, cols, M, KB, EVEN: tl.constexpr):
    """One step's A blocks, A scales (BM, NB) and vector blocks, vector scales (1, NB).

    ``EVEN`` drops every mask when the tile cannot leave the matrix; masked loads also switch
    off the prefetch past the last step.
    """
    offs = row_off[:, None] + cols
    # Two blocks (16 bytes of A, 2 scale bytes) per thread and column: without the hint the
    # scale bytes ask for 16-byte vectors and each thread would own 16 blocks of one row,
    # so the vector decode would cost as much as A's.
    scale_offs = tl.max_contiguous(offs, [1, 2])
    if EVEN:
        blocks = tl.load(a_ptr + offs)
        sa = tl.load(sa_ptr + scale_offs)
        vec = tl.load(b_ptr + vec_off + cols)
        sb = tl.load(sb_ptr + vec_off + cols)
    else:
        col_ok = cols < KB
        mask = (rows < M)[:, None] & col_ok
        blocks = tl.load(a_ptr + offs, mask=mask, other=0)
        sa = tl.load(sa_ptr + scale_offs, mask=mask, other=0)
        vec = tl.load(b_ptr + vec_off + cols, mask=col_ok, other=0)
        sb = tl.load(sb_ptr + vec_off + cols, mask=col_ok, other=0)
    return blocks, sa, vec, sb


@triton.jit
def _gemv_kernel(
    a_ptr,  # (L, M, K/16) int64: one scale block (8 bytes, 16 codes) per element
    sa_ptr,  # (L, M, K/16) uint8 e4m3
    b_ptr,  # (L, 128, K/16) int64; row 0 of each batch is the vector
    sb_ptr,  # (L, 128, K/16) uint8 e4m3
    c_ptr,  # (L, M) fp16
    tab_ptr,  # int32 (2, 256): 256 copies of 0x03020100, then of 0x0C080604 (dp4a decode table)
    M,
    KB,  # K / 16
    BM: tl.constexpr,
    NB: tl.constexpr,  # scale blocks per step (16 codes each)
    EVEN: tl.constexpr,  # M % BM == 0 and KB % NB == 0
    PREFETCH: tl.constexpr,  # load step i + 1 before decoding step i
    DECODE: tl.constexpr,  # 0: plain Triton (any device, the interpreter); 1: f16x2 PTX; 2: int8 dp4a PTX
):
    pid_m = tl.program_id(0)
    batch = tl.program_id(1)
    rows = pid_m * BM + tl.arange(0, BM)
    row_off = (batch * M + rows).to(tl.int64) * KB
    vec_off = batch.to(tl.int64) * 128 * KB
    cols0 = tl.arange(0, NB)[None, :]
    acc = tl.zeros((BM, NB), dtype=tl.float32)
    if DECODE == 2:
        # The prmt lookup table 2 * |e2m1| = 0, 1, 2, 3, 4, 6, 8, 12 as two words, loaded from
        # NB copies (one per column): as a constant or a uniform value, ptxas would copy it into
        # a fresh register before every prmt.
        tab_lo = tl.load(tab_ptr + cols0)
        tab_hi = tl.load(tab_ptr + 256 + cols0)
    if PREFETCH:
        n_blocks, n_sa, n_vec, n_sb = _load_step(
            a_ptr, sa_ptr, b_ptr, sb_ptr, rows, row_off, vec_off, cols0, M, KB, EVEN
        )
    for k0 in range(0, KB, NB):
        if PREFETCH:
            blocks, sa, vec, sb_raw = n_blocks, n_sa, n_vec, n_sb
            # EVEN: re-load the last step instead of masking (it is still in L2).
            nxt = tl.minimum(k0 + NB, KB - NB) if EVEN else k0 + NB
            n_blocks, n_sa, n_vec, n_sb = _load_step(
                a_ptr, sa_ptr, b_ptr, sb_ptr, rows, row_off, vec_off, nxt + cols0, M, KB, EVEN
            )
        else:
            blocks, sa, vec, sb_raw = _load_step(
                a_ptr, sa_ptr, b_ptr, sb_ptr, rows, row_off, vec_off, k0 + cols0, M, KB, EVEN
            )
        sb = _e4m3_to_f32(sb_raw)
        if DECODE == 2:
            s0, s1, n0, n1 = _vector_i8(vec.to(tl.int32), tab_lo, tab_hi)
            s2, s3, n2, n3 = _vector_i8((vec >> 32).to(tl.int32), tab_lo, tab_hi)
            part = _block_dot_i8(blocks, s0, s1, s2, s3, n0, n1, n2, n3, sa.to(tl.int32), tab_lo, tab_hi)
            acc += part * (sb * 0.25)
        elif DECODE == 1:
            p0, p1, p2, p3 = _vector_pairs(vec.to(tl.int32))
            p4, p5, p6, p7 = _vector_pairs((vec >> 32).to(tl.int32))
            part = _block_dot(blocks, p0, p1, p2, p3, p4, p5, p6, p7, sa.to(tl.int32))
            acc += part * (sb * 16384.0)
        else:
            shifts = (4 * tl.arange(0, 16)).to(tl.int64)[None, None, :]
            a_val = _e2m1_to_f32((blocks[:, :, None] >> shifts) & 0xF)
            b_val = _e2m1_to_f32((vec[:, :, None] >> shifts) & 0xF)
            part = tl.sum(a_val * b_val, axis=2)
            acc += part * _e4m3_to_f32(sa) * sb
    out = tl.sum(acc, axis=1)
    tl.store(c_ptr + batch * M + rows, out.to(tl.float16), mask=rows < M)


def _use_asm(t: torch.Tensor) -> bool:
    """PTX runs only on a real GPU; the CPU interpreter takes the plain-Triton path."""
    return t.is_cuda and os.environ.get("TRITON_INTERPRET") != "1"


_TABLES: dict = {}
_TABLE_COPIES = 256  # one per block column of a step, so NB <= 256


def _table(device: torch.device) -> torch.Tensor:
    """The dp4a decode's byte table (2 * |e2m1| for codes 0..7), 256 copies, one tensor per device."""
    if device not in _TABLES:
        words = torch.tensor([0x03020100, 0x0C080604], dtype=torch.int32)
        _TABLES[device] = words.repeat_interleave(_TABLE_COPIES).to(device)
    return _TABLES[device]


def _as_blocks(packed: torch.Tensor) -> torch.Tensor:
    """(rows, K/2, L) fp4x2 view of (L, rows, K/2) storage -> (L, rows, K/16) int64, no copy."""
    return packed.view(torch.uint8).permute(2, 0, 1).contiguous().view(torch.int64)


def _as_scale_bytes(scales: torch.Tensor) -> torch.Tensor:
    """(rows, K/16, L) e4m3 view of (L, rows, K/16) storage -> (L, rows, K/16) uint8, no copy."""
    return scales.view(torch.uint8).permute(2, 0, 1).contiguous()


def gemv(
    data: input_t,
    block_m: int | None = None,
    blocks_per_step: int | None = None,
    num_warps: int | None = None,
    num_stages: int | None = None,
    prefetch: bool | None = None,
    use_asm: bool | None = None,
    decode: str = "i8",
) -> output_t:
    """Run the kernel with an explicit configuration (``None`` picks the tuned default).

    ``decode``: "i8" (prmt + dp4a) or "f16" (bit trick + f16x2 FMA) on the GPU; ``use_asm=False``
    forces the plain-Triton decode.
    """
    a, b, sfa, sfb, _, _, c = data
    m, half_k, batches = a.shape
    kb = half_k // 8
    asm = _use_asm(a) if use_asm is None else use_asm
    bm = block_m or 32
    nb = blocks_per_step or min(64, triton.next_power_of_2(kb))
    if nb > _TABLE_COPIES:
        raise ValueError(f"blocks_per_step={nb} exceeds the {_TABLE_COPIES} copies of the decode table")
    warps = num_warps or 4
    stages = num_stages or 1
    pf = False if prefetch is None else prefetch
    # c is (M, 1, L), a view of (L, M, 1) storage: batch-major rows, as the kernel writes them.
    target = c.permute(2, 0, 1)
    if not target.is_contiguous():
        target = torch.empty((batches, m, 1), dtype=torch.float16, device=c.device)
    grid = (triton.cdiv(m, bm), batches)
    _gemv_kernel[grid](
        _as_blocks(a),
        _as_scale_bytes(sfa),
        _as_blocks(b),
        _as_scale_bytes(sfb),
        target,
        _table(a.device),
        m,
        kb,
        BM=bm,
        NB=nb,
        EVEN=m % bm == 0 and kb % nb == 0,
        PREFETCH=pf,
        DECODE=({"f16": 1, "i8": 2}[decode] if asm else 0),
        num_warps=warps,
        num_stages=stages,
    )
    if target.data_ptr() != c.data_ptr():
        c.copy_(target.permute(1, 2, 0))
    return c


def custom_kernel(data: input_t) -> output_t:
    return gemv(data)
