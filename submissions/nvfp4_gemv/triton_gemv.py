#!POPCORN leaderboard nvfp4_gemv
#!POPCORN author harness-baselines
"""NVFP4 batched GEMV in Triton, decoding e2m1 and e4m3 in registers (Hopper and newer).

What bounds it: DRAM. A GEMV reads every byte of A once (M * K / 2 codes + M * K / 16 scales)
and does 2 FLOP per code, so the speed of light is A's bytes over the memory bandwidth. Reaching
it takes two things: enough bytes in flight per SM to cover the DRAM latency (about 18 KB per
SM on the H100: 3.2 TB/s x ~0.7 us / 132 SMs), and a decode cheap enough to hide under the loads.

Bytes in flight: one program owns BM rows of A (and one batch l) and streams them along K in
steps of NB scale blocks (16 codes, 8 bytes, one int64 each): per thread 16-byte vector loads of
two blocks per row and the 2-byte pair of their scales, straight into registers (no shared
memory). ``prefetch`` loads step i + 1 before decoding step i (two steps in flight).
Default: one program per row tile (``split_k`` 1); where the row tiles number under two an SM,
128 blocks a step and 8 warps (``FEW_TILES``).
``split_k`` > 1 splits K over that many programs per row tile, and 0 picks the split
(``pick_split``: up to ``per_sm`` programs per SM, a power of two dividing the K steps); each
writes fp32 partial row sums, and the last to arrive (an atomic counter) adds them in a fixed
order and writes C in the same launch. Through the harness the split measured slower (issue 37:
37.06 us against 27.84 on 7168 x 16384 at L = 1), so it is a configuration the tune can pick,
not the default. With ``SPLIT`` 1 the kernel compiles to the unsplit loop (sm_90a PTX, CPU).

Decode (``_block_dot_i8``, one PTX snippet per 8-byte block, on whole 32-bit words):
- ``prmt`` with the codes as byte selectors looks up 2 * |e2m1| in an 8-byte table, 4 codes per
  instruction; a selector's sign bit makes prmt emit 0, so the codes give the positive part
  and the codes with flipped sign bits (one xor per word) the negative part, A = pos - neg;
- ``dp4a`` multiplies them with the vector's signed and negated int8 codes (decoded once per
  column and shared by all rows): the block's dot product, exact in int32;
- one int-to-float conversion and the row's e4m3 scale (``cvt.rn.f16x2.e4m3x2``) finish it.
About 40 SASS instructions per 8-byte block. The vector's scale and the 1/4 of the doubled codes
fold into one fp32 factor per block column; fp32 partials per (row, block column) are reduced
over the row once at the end.
Measured on the H100 through the harness, ranked (docs/results.md run 20): 25.78 / 46.97 / 13.60 us,
81.0% of the speed of light (geomean).
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
    ws_ptr,  # fp32 split-K partials: (L * tiles, SPLIT, BM)
    cnt_ptr,  # int32 arrival counter per (batch, tile), zero between launches
    M,
    KB,  # K / 16
    BM: tl.constexpr,
    NB: tl.constexpr,  # scale blocks per step (16 codes each)
    SPLIT: tl.constexpr,  # programs sharing one row tile's K (the host makes it divide the steps)
    EVEN: tl.constexpr,  # M % BM == 0 and KB % NB == 0
    PREFETCH: tl.constexpr,  # load step i + 1 before decoding step i
    USE_ASM: tl.constexpr,  # prmt + dp4a PTX; else plain Triton (any device, the interpreter)
):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    tile = pid // SPLIT
    split = pid % SPLIT
    rows = tile * BM + tl.arange(0, BM)
    row_off = (batch * M + rows).to(tl.int64) * KB
    vec_off = batch.to(tl.int64) * 128 * KB
    if SPLIT == 1:  # the unsplit kernel's own loop bounds
        k_first = 0
        k_end = KB
    else:
        per_split = tl.cdiv(tl.cdiv(KB, NB), SPLIT) * NB
        k_first = split * per_split
        k_end = tl.minimum(KB, k_first + per_split)
    cols0 = tl.arange(0, NB)[None, :]
    acc = tl.zeros((BM, NB), dtype=tl.float32)
    if USE_ASM:
        # The prmt lookup table 2 * |e2m1| = 0, 1, 2, 3, 4, 6, 8, 12 as two words, loaded from
        # NB copies (one per column): as a constant or a uniform value, ptxas would copy it into
        # a fresh register before every prmt.
        tab_lo = tl.load(tab_ptr + cols0)
        tab_hi = tl.load(tab_ptr + 256 + cols0)
    if PREFETCH:
        n_blocks, n_sa, n_vec, n_sb = _load_step(
            a_ptr, sa_ptr, b_ptr, sb_ptr, rows, row_off, vec_off, k_first + cols0, M, KB, EVEN
        )
    for k0 in range(k_first, k_end, NB):
        if PREFETCH:
            blocks, sa, vec, sb_raw = n_blocks, n_sa, n_vec, n_sb
            # EVEN: re-load the last step instead of masking (it is still in L2).
            nxt = tl.minimum(k0 + NB, k_end - NB) if EVEN else k0 + NB
            n_blocks, n_sa, n_vec, n_sb = _load_step(
                a_ptr, sa_ptr, b_ptr, sb_ptr, rows, row_off, vec_off, nxt + cols0, M, KB, EVEN
            )
        else:
            blocks, sa, vec, sb_raw = _load_step(
                a_ptr, sa_ptr, b_ptr, sb_ptr, rows, row_off, vec_off, k0 + cols0, M, KB, EVEN
            )
        sb = _e4m3_to_f32(sb_raw)
        if USE_ASM:
            s0, s1, n0, n1 = _vector_i8(vec.to(tl.int32), tab_lo, tab_hi)
            s2, s3, n2, n3 = _vector_i8((vec >> 32).to(tl.int32), tab_lo, tab_hi)
            part = _block_dot_i8(blocks, s0, s1, s2, s3, n0, n1, n2, n3, sa.to(tl.int32), tab_lo, tab_hi)
            acc += part * (sb * 0.25)
        else:
            shifts = (4 * tl.arange(0, 16)).to(tl.int64)[None, None, :]
            a_val = _e2m1_to_f32((blocks[:, :, None] >> shifts) & 0xF)
            b_val = _e2m1_to_f32((vec[:, :, None] >> shifts) & 0xF)
            part = tl.sum(a_val * b_val, axis=2)
            acc += part * _e4m3_to_f32(sa) * sb
    out = tl.sum(acc, axis=1)
    if SPLIT == 1:
        tl.store(c_ptr + batch * M + rows, out.to(tl.float16), mask=rows < M)
    else:
        # The last of the SPLIT programs of this tile to arrive adds the partials in a fixed
        # order (deterministic), writes C and re-arms the counter for the next launch.
        slot = batch * tl.cdiv(M, BM) + tile
        base = ws_ptr + slot.to(tl.int64) * (SPLIT * BM) + tl.arange(0, BM)
        tl.store(base + split * BM, out)
        tl.debug_barrier()
        arrived = tl.atomic_add(cnt_ptr + slot, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT - 1:
            total = tl.zeros((BM,), dtype=tl.float32)
            for part_id in tl.static_range(SPLIT):
                total += tl.load(base + part_id * BM, cache_modifier=".cg")
            tl.store(c_ptr + batch * M + rows, total.to(tl.float16), mask=rows < M)
            tl.atomic_xchg(cnt_ptr + slot, 0, sem="relaxed", scope="gpu")


def _use_asm(t: torch.Tensor) -> bool:
    """PTX runs only on a real GPU; the CPU interpreter takes the plain-Triton path."""
    return t.is_cuda and os.environ.get("TRITON_INTERPRET") != "1"


_TABLES: dict = {}
_TABLE_COPIES = 256  # one per block column of a step, so NB <= 256
_SCRATCH: dict = {}


def _table(device: torch.device) -> torch.Tensor:
    """The dp4a decode's byte table (2 * |e2m1| for codes 0..7), 256 copies, one tensor per device."""
    if device not in _TABLES:
        words = torch.tensor([0x03020100, 0x0C080604], dtype=torch.int32)
        _TABLES[device] = words.repeat_interleave(_TABLE_COPIES).to(device)
    return _TABLES[device]


def _scratch(device: torch.device, ws_elems: int, slots: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Split-K partials and zeroed counters, kept across calls (the kernel re-zeroes counters)."""
    key = (str(device), ws_elems, slots)
    if key not in _SCRATCH:
        if len(_SCRATCH) > 16:
            _SCRATCH.clear()
        _SCRATCH[key] = (
            torch.empty(max(ws_elems, 1), dtype=torch.float32, device=device),
            torch.zeros(max(slots, 1), dtype=torch.int32, device=device),
        )
    return _SCRATCH[key]


def _num_sms(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 132


def pick_split(programs: int, steps: int, sms: int, per_sm: int = 6, min_steps: int = 2) -> int:
    """Split K (a power of two dividing ``steps``) until ``programs`` reach ``per_sm`` per SM.

    A memory-bound program has one step of loads in flight; with under about six resident
    programs per SM (7168 rows at L = 1: 1.7) the SM cannot keep enough bytes in flight.
    Each split keeps at least ``min_steps`` steps so the fix-up stays small.
    """
    split = 1
    while programs * split < per_sm * sms and steps % (2 * split) == 0 and steps // (2 * split) >= min_steps:
        split *= 2
    return split


def _as_blocks(packed: torch.Tensor) -> torch.Tensor:
    """(rows, K/2, L) fp4x2 view of (L, rows, K/2) storage -> (L, rows, K/16) int64, no copy."""
    return packed.view(torch.uint8).permute(2, 0, 1).contiguous().view(torch.int64)


def _as_scale_bytes(scales: torch.Tensor) -> torch.Tensor:
    """(rows, K/16, L) e4m3 view of (L, rows, K/16) storage -> (L, rows, K/16) uint8, no copy."""
    return scales.view(torch.uint8).permute(2, 0, 1).contiguous()


# Tuned on the H100 (docs/baselines.md; scripts/tune_nvfp4.py sweeps around it). split_k: 1 no
# split, 0 pick_split with per_sm, n > 1 that many programs per row tile.
DEFAULT_CONFIG = {
    "block_m": 32,
    "blocks_per_step": 64,
    "num_warps": 4,
    "num_stages": 1,
    "prefetch": False,
    "split_k": 1,
    "per_sm": 6,
}


# Under two row tiles an SM (7168 x 16384 at L = 1: 224 programs, 6.7 warps an SM by Nsight
# Compute), longer steps and twice the warps keep more loads in flight: 25.63 against 28.08 us
# on the H100 (docs/results.md run 20); on the other benchmark shapes they read slower.
FEW_TILES = {"blocks_per_step": 128, "num_warps": 8}


def gemv(data: input_t, use_asm: bool | None = None, **config) -> output_t:
    """Run the kernel; ``config`` overrides DEFAULT_CONFIG keys; ``use_asm=False`` forces the plain-Triton decode."""
    a, b, sfa, sfb, _, _, c = data
    m, half_k, batches = a.shape
    kb = half_k // 8
    if unknown := set(config) - set(DEFAULT_CONFIG):
        raise TypeError(f"unknown configuration keys {sorted(unknown)}: choose from {sorted(DEFAULT_CONFIG)}")
    cfg = {**DEFAULT_CONFIG, **config}
    asm = _use_asm(a) if use_asm is None else use_asm
    bm = cfg["block_m"]
    if triton.cdiv(m, bm) * batches < 2 * _num_sms(a.device) and not {"blocks_per_step", "num_warps"} & set(config):
        cfg.update(FEW_TILES)
    nb = min(cfg["blocks_per_step"], triton.next_power_of_2(kb))
    if nb > _TABLE_COPIES:
        raise ValueError(f"blocks_per_step={nb} exceeds the {_TABLE_COPIES} copies of the decode table")
    tiles = triton.cdiv(m, bm)
    steps = triton.cdiv(kb, nb)
    split = cfg["split_k"] or pick_split(tiles * batches, steps, _num_sms(a.device), cfg["per_sm"])
    if split < 1 or steps % split:
        raise ValueError(f"split_k={split} does not divide the {steps} K steps of this shape")
    ws, counters = _scratch(a.device, batches * tiles * split * bm if split > 1 else 0, batches * tiles)
    # c is (M, 1, L), a view of (L, M, 1) storage: batch-major rows, as the kernel writes them.
    target = c.permute(2, 0, 1)
    if not target.is_contiguous():
        target = torch.empty((batches, m, 1), dtype=torch.float16, device=c.device)
    _gemv_kernel[(tiles * split, batches)](
        _as_blocks(a),
        _as_scale_bytes(sfa),
        _as_blocks(b),
        _as_scale_bytes(sfb),
        target,
        _table(a.device),
        ws,
        counters,
        m,
        kb,
        BM=bm,
        NB=nb,
        SPLIT=split,
        EVEN=m % bm == 0 and kb % nb == 0,
        PREFETCH=cfg["prefetch"],
        USE_ASM=asm,
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
    )
    if target.data_ptr() != c.data_ptr():
        c.copy_(target.permute(1, 2, 0))
    return c


def custom_kernel(data: input_t) -> output_t:
    return gemv(data)
