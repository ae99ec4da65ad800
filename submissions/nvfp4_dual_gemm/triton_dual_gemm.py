#!POPCORN leaderboard nvfp4_dual_gemm
#!POPCORN author harness-baselines
"""NVFP4 gated dual GEMM, silu(A @ B1^T) * (A @ B2^T), in Triton with in-register NVFP4 decode.

What it does, in two launches: a small kernel decodes A once to fp16 (block scale applied) in the
tile's K order; the dual GEMM kernel computes the transposed products B1 A^T and B2 A^T, so the
large operands B1 and B2 (N x K weights) are decoded in registers and fed to wgmma as its
register operand, while the fp16 A reaches wgmma with no decode; A and B's bytes arrive by TMA
(tensor descriptors, pipelined over ``num_stages``). Per K step a program decodes one tile of B1
and one of B2, then accumulates two fp16 dots into two fp32 accumulators (gate and up); the
epilogue computes silu(gate) * up in fp32 and stores fp16.

The tile's K order (``_decode_tile``): within each BK columns, position 8 j + 2 q + h holds nibble
j % 2 of byte BK / 8 q + 2 (j // 2) + h, so each lane's bytes decode straight into wgmma's register
layout and the decoded B never goes through shared memory (tests/test_triton_baselines_ptx.py). Each
step's bytes pass through a wgmma wait (``_after_wgmma``) so that the decode never writes the registers of a
wgmma still in flight (docs/baselines.md: the same test checks the compiled loop for such writes).

Why this design (on Hopper, which has no FP4 tensor cores; docs/baselines.md has the Nsight
Compute profile): the earlier version decoded A and B in every program and sent the decoded B
through shared memory; A is now decoded once for all N tiles. fp16 bits ((n & 7) << 9) |
((n & 8) << 12) equal e2m1(n) * 2^-14 (subnormals included); multiplying by the e4m3 block scale
in fp16 is exact (at most 6 significant bits, below 1). Both accumulators are scaled by 2^28
once. When the tile grid cannot fill the GPU, K is split across programs and the last one to
finish a tile (atomic counter) adds the fp32 partials in a fixed order before the epilogue, in
the same launch. Under the CPU interpreter (``TRITON_INTERPRET=1``) the decode runs in plain
Triton.

Measured ranked through ``harness eval``: 57.9% of the Hopper speed of light on the H200 with the
fix-up's sum unrolled (docs/results.md run 42, 2026-11-28), 56.9% with the byte-parallel decode
(``_decode_asm``; run 41); on the H100 (run 40) 52.6%
before it (geomean; 52.4% without the wait, 51.1% with each register holding both
nibbles of one byte, 35.4% with A in two planes and the decoded B sent through shared memory, 22.2%
with cp.async, 17.6% before the pre-pass).
"""

import os

import torch
import triton
import triton.language as tl
from task import input_t, output_t
from triton.tools.tensor_descriptor import TensorDescriptor

NUM_SMS_DEFAULT = 132


@triton.jit
def _decode_asm(x, s):
    """Bytes x (uint8) and their block scales s (fp16) -> (low, high) nibble values * 2^-14, fp16.

    All four bytes of a word at once: each nibble becomes the upper byte of its fp16 (sign to bit 7,
    the three magnitude bits to bits 3..1), low nibbles in one word and high nibbles in another; a
    byte permute then puts two of them into an f16x2 register over zero low bytes. 15 SASS
    instructions for 8 codes against 22 one register at a time; on Hopper each counts, since the
    decode's time adds to the wgmmas' instead of hiding under them (docs/baselines.md, run 41).
    """
    return tl.inline_asm_elementwise(
        asm="""
        {
        .reg .b32 z, lo, hi, t;
        mov.b32 z, 0;
        shl.b32 lo, $4, 4; and.b32 lo, lo, 0x80808080;
        shl.b32 t, $4, 1;  and.b32 t, t, 0x0E0E0E0E; or.b32 lo, lo, t;
        shr.b32 t, $4, 3;  and.b32 t, t, 0x0E0E0E0E;
        and.b32 hi, $4, 0x80808080; or.b32 hi, hi, t;
        prmt.b32 t, lo, z, 0x1404; mul.rn.f16x2 $0, t, $5;
        prmt.b32 t, lo, z, 0x3424; mul.rn.f16x2 $1, t, $6;
        prmt.b32 t, hi, z, 0x1404; mul.rn.f16x2 $2, t, $5;
        prmt.b32 t, hi, z, 0x3424; mul.rn.f16x2 $3, t, $6;
        }
        """,
        constraints="=r,=r,=r,=r,r,r,r",
        args=[x, s],
        dtype=(tl.float16, tl.float16),
        is_pure=True,
        pack=4,
    )


@triton.jit
def _after_wgmma(x):
    """``x`` (uint8) unchanged, from the point where every wgmma this warpgroup issued has completed.

    Why: Triton 3.6's waits leave all but one of a K step's wgmma groups in flight at the loop's back edge,
    and ptxas does not always keep their A registers (the decoded B) untouched until they retire, so
    the next step's decode could overwrite an operand a wgmma has yet to read: the GEMM read inf that
    way (docs/results.md run 40). Passing the next step's bytes through this wait orders the decode's
    register writes after it; ptxas still starts the decode early into free registers.
    tests/test_triton_baselines_ptx.py checks the compiled loop for such writes.
    """
    return tl.inline_asm_elementwise(
        asm="wgmma.wait_group.sync.aligned 0;\n mov.b32 $0, $4;\n mov.b32 $1, $5;\n mov.b32 $2, $6;\n mov.b32 $3, $7;",
        constraints="=r,=r,=r,=r,r,r,r,r",
        args=[x],
        dtype=tl.uint8,
        is_pure=False,
        pack=16,  # one wait for each 16 bytes a thread holds (two a step), not for each 4
    )


@triton.jit
def _decode_ref(x, s):
    """Plain-Triton twin of ``_decode_asm`` (same bits, one element at a time)."""
    x = x.to(tl.int32)
    lo = (((x & 0x07) << 9) | ((x & 0x08) << 12)).to(tl.int16).to(tl.float16, bitcast=True)
    hi = (((x & 0x70) << 5) | ((x & 0x80) << 8)).to(tl.int16).to(tl.float16, bitcast=True)
    return lo * s, hi * s


@triton.jit
def _tile_mask(
    rows, row_count, k0, K, R: tl.constexpr, NBLK: tl.constexpr, ROW_MASK: tl.constexpr, K_MASK: tl.constexpr
):
    """(R, NBLK) validity of an operand tile's scale blocks (only called when a mask is needed)."""
    blk = tl.arange(0, NBLK)
    if ROW_MASK:
        ok = tl.broadcast_to((rows < row_count)[:, None], (R, NBLK))
        if K_MASK:
            ok = ok & ((k0 + blk * 16) < K)[None, :]
    else:
        ok = tl.broadcast_to(((k0 + blk * 16) < K)[None, :], (R, NBLK))
    return ok


@triton.jit
def _load_scales(
    sptr,
    rows,
    row_count,
    row_base,
    k0,
    K,
    R: tl.constexpr,
    BK: tl.constexpr,
    ROW_MASK: tl.constexpr,
    K_MASK: tl.constexpr,
    WORDS: tl.constexpr,
):
    """The (R, BK / 16) e4m3 scale bytes of rows ``rows``, codes k0 .. k0 + BK (uint8).

    ``WORDS`` (BK of 64 or 128, K % BK == 0): read each row's BK / 16 bytes as one 4- or 8-byte
    word, wide enough for Triton to pipeline the load with cp.async like the data, then split
    the bytes in registers. Otherwise one byte per block (and the caller prefetches a step
    ahead, since Triton leaves loads under 4 bytes out of its pipelining).
    """
    NBLK: tl.constexpr = BK // 16
    glob = (row_base + rows).to(tl.int64)
    if WORDS:
        if NBLK == 4:
            wptr = sptr.to(tl.pointer_type(tl.int32)) + glob * (K // 64) + k0 // 64
        else:
            wptr = sptr.to(tl.pointer_type(tl.int64)) + glob * (K // 128) + k0 // 128
        w = tl.load(wptr, mask=rows < row_count, other=0) if ROW_MASK else tl.load(wptr)
        shifts = (8 * tl.arange(0, NBLK)).to(w.dtype)
        return ((w[:, None] >> shifts[None, :]) & 0xFF).to(tl.uint8)
    soffs = glob[:, None] * (K // 16) + (k0 // 16 + tl.arange(0, NBLK))[None, :]
    if ROW_MASK or K_MASK:
        return tl.load(sptr + soffs, mask=_tile_mask(rows, row_count, k0, K, R, NBLK, ROW_MASK, K_MASK), other=0)
    return tl.load(sptr + soffs)


@triton.jit
def _load_decode(
    ptr,
    s,
    rows,
    row_count,
    row_base,
    k0,
    K,
    R: tl.constexpr,
    BK: tl.constexpr,
    ROW_MASK: tl.constexpr,
    K_MASK: tl.constexpr,
    USE_ASM: tl.constexpr,
):
    """Rows ``rows`` of one operand, codes k0 .. k0 + BK: (R, BK) fp16 in the tile's K order (``_decode_tile``).

    ``s`` holds the tile's scale bytes (``_load_scales``). ``row_base`` is the operand's first
    row of this batch; rows are K/2 bytes. Masks are compiled in only where a tile can leave
    the matrix.
    """
    cols = k0 // 2 + tl.arange(0, BK // 2)
    offs = (row_base + rows).to(tl.int64)[:, None] * (K // 2) + cols[None, :]
    if ROW_MASK or K_MASK:
        x = tl.load(ptr + offs, mask=(rows < row_count)[:, None] & (cols < K // 2)[None, :], other=0)
    else:
        x = tl.load(ptr + offs)
    return _decode_tile(x, s, R, BK, USE_ASM)


@triton.jit
def _decode_tile(x, s, R: tl.constexpr, BK: tl.constexpr, USE_ASM: tl.constexpr):
    """(R, BK / 2) code bytes and their (R, BK / 16) scale bytes -> (R, BK) fp16 in the tile's K order.

    The tile's K order: with J = BK / 8, position 8 j + 2 q + h (q < 4, j < J, h < 2) holds nibble
    j % 2 of byte J q + 2 (j // 2) + h. wgmma's register operand gives the thread of lane q (mod 4)
    the pairs at positions 2 q + 8 j of its rows; in this order they are the J consecutive bytes of
    one quarter of each row, and each f16x2 register holds the same nibble of two neighbouring bytes,
    which is how the decode's snippet writes them: the bytes come from shared memory in one vector
    load per row and the decoded tile is already in wgmma's layout (no trip back through shared
    memory, and no half-word shuffles, which pairing both nibbles of one byte cost: docs/baselines.md
    has the counts). A is stored in the same order by the pre-pass, so the dot sums
    the same products.
    """
    J: tl.constexpr = BK // 8
    scale = s.to(tl.float8e4nv, bitcast=True).to(tl.float16)
    scale = tl.reshape(tl.broadcast_to(tl.reshape(scale, (R, 4, BK // 64, 1)), (R, 4, BK // 64, 8)), (R, 4, J))
    x = tl.reshape(x, (R, 4, J))
    if USE_ASM:
        lo, hi = _decode_asm(x, scale)
    else:
        lo, hi = _decode_ref(x, scale)
    pairs = tl.join(tl.reshape(lo, (R, 4, J // 2, 2)), tl.reshape(hi, (R, 4, J // 2, 2)))  # [r, q, i, h, nibble]
    return tl.reshape(tl.permute(pairs, (0, 2, 4, 1, 3)), (R, BK))


@triton.jit
def _row_order(BN: tl.constexpr, WARPS: tl.constexpr):
    """The tile's row order: the B row (of BN) that each row of the decoded tile holds.

    The bytes' load gives warp w rows 8 w .. 8 w + 7 of each 8 WARPS rows (registers hold the
    next 8 WARPS); wgmma's register operand gives warp w rows 16 w .. 16 w + 15 of each 16 WARPS,
    split between two registers. Row 16 WARPS h + 16 w + 8 t + r of the tile therefore holds
    row 8 WARPS (2 h + t) + 8 w + r, so no row crosses between warps. Any order is correct
    (C is stored in the same order); others are slower. BN not a multiple of 16 WARPS: memory's.
    """
    row = tl.arange(0, BN)
    if BN % (16 * WARPS) == 0:
        row = ((row // (16 * WARPS) * 2 + row // 8 % 2) * WARPS + row // 16 % WARPS) * 8 + row % 8
    return row


@triton.jit
def _rows_in_order(x, BN: tl.constexpr, BK: tl.constexpr, WARPS: tl.constexpr):
    """(BN, BK / 2) bytes in memory's row order -> the same in the tile's row order (``_row_order``)."""
    if BN % (16 * WARPS) == 0:
        x = tl.reshape(x, (BN // (16 * WARPS), 2, WARPS, 8, BK // 2))
        x = tl.permute(x, (0, 2, 1, 3, 4))
    return tl.reshape(x, (BN, BK // 2))


@triton.jit
def _predecode_kernel(
    a_ptr,  # (L * M, K/2) uint8
    sa_ptr,  # (L * M, K/16) uint8 e4m3
    out_ptr,  # (L * M, KP) fp16, values * 2^-14, each BK columns in the tile's K order (zeros past K)
    ROWS,
    K,
    KP,  # K rounded up to BK
    R: tl.constexpr,
    BK: tl.constexpr,  # the dual GEMM kernel's BK: the span of the tile's K order
    ROW_MASK: tl.constexpr,
    K_MASK: tl.constexpr,
    USE_ASM: tl.constexpr,
    PDL: tl.constexpr,  # the main kernel is launched as this one's programmatic dependent
):
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()  # its programs may start now; they wait for A before reading it
    rows = tl.program_id(0) * R + tl.arange(0, R)
    k0 = tl.program_id(1) * BK
    s = _load_scales(sa_ptr, rows, ROWS, 0, k0, K, R, BK, ROW_MASK, K_MASK, False)
    vals = _load_decode(a_ptr, s, rows, ROWS, 0, k0, K, R, BK, ROW_MASK, K_MASK, USE_ASM)
    offs = rows.to(tl.int64)[:, None] * KP + (k0 + tl.arange(0, BK))[None, :]
    tl.store(out_ptr + offs, vals, mask=(rows < ROWS)[:, None])


@triton.jit
def _epilogue(c_ptr, c_offs, c_mask, gate, up):
    """silu(gate) * up in fp32 (operands carried 2^-14 each, so products 2^-28), fp16 store."""
    gate = tl.trans(gate) * 268435456.0
    up = tl.trans(up) * 268435456.0
    tl.store(c_ptr + c_offs, (gate * tl.sigmoid(gate) * up).to(tl.float16), mask=c_mask)


@triton.jit
def _dual_gemm_kernel(
    ad_desc,  # (L * M, KP) fp16 A from _predecode_kernel (the tile's K order): descriptor of (BM, BK) boxes
    b1_desc,  # (L, N, K/2) uint8: descriptor of (1, BN, BK/2) boxes
    sb1_ptr,  # (L, N, K/16) uint8 e4m3
    b2_desc,
    sb2_ptr,
    c_ptr,  # (L, M, N) fp16
    ws_ptr,  # fp32 split-K partials: (L * tiles, SPLIT_K, 2, BN, BM)
    cnt_ptr,  # int32 per-tile arrival counters, zero between launches
    M,
    N,
    K,
    L,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    SPLIT_K,  # programs a tile's K is split over (at run time: one compiled kernel for every split)
    SPLIT: tl.constexpr,  # SPLIT_K > 1
    N_MASK: tl.constexpr,
    K_MASK: tl.constexpr,
    SCALE_WORDS: tl.constexpr,
    USE_ASM: tl.constexpr,
    COMPILED: tl.constexpr,  # for the GPU, not the interpreter (which runs no PTX): the wgmma waits
    WARPS: tl.constexpr,  # num_warps (the tile's row order)
    PDL: tl.constexpr,  # launched as the pre-pass's programmatic dependent: wait for its A
):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    tiles_m = tl.cdiv(M, BM)
    split = pid % SPLIT_K
    tile = pid // SPLIT_K
    tm = tile % tiles_m
    tn = tile // tiles_m
    rows_a = tm * BM + tl.arange(0, BM)
    rows_b = tn * BN + _row_order(BN, WARPS)
    steps = tl.cdiv(K, BK)
    per_split = tl.cdiv(steps, SPLIT_K)
    first = split * per_split
    last = tl.minimum(steps, first + per_split)
    gate = tl.zeros((BN, BM), dtype=tl.float32)
    up = tl.zeros((BN, BM), dtype=tl.float32)
    if PDL:
        tl.extra.cuda.gdc_wait()  # the pre-pass's A is complete and visible from here
    for step in range(first, last):  # TMA copies pipelined num_stages deep (the launch's option)
        k0 = step * BK
        # TMA boxes read zeros past N and K; A's rows past M (another batch's, or zeros) reach
        # only rows of C past M, which are never stored.
        a_dec = tl.trans(ad_desc.load([batch * M + tm * BM, k0]))
        # Both B tiles are decoded before either dot: a decode between two asynchronous wgmma
        # groups writes their input registers, and ptxas then serialises every wgmma (C7513).
        sb1 = _load_scales(sb1_ptr, rows_b, N, batch * N, k0, K, BN, BK, N_MASK, K_MASK, SCALE_WORDS)
        b1_bytes = _rows_in_order(b1_desc.load([batch, tn * BN, k0 // 2]), BN, BK, WARPS)
        if COMPILED:
            b1_bytes = _after_wgmma(b1_bytes)
        b1_dec = _decode_tile(b1_bytes, sb1, BN, BK, USE_ASM)
        sb2 = _load_scales(sb2_ptr, rows_b, N, batch * N, k0, K, BN, BK, N_MASK, K_MASK, SCALE_WORDS)
        b2_bytes = _rows_in_order(b2_desc.load([batch, tn * BN, k0 // 2]), BN, BK, WARPS)
        if COMPILED:
            b2_bytes = _after_wgmma(b2_bytes)
        b2_dec = _decode_tile(b2_bytes, sb2, BN, BK, USE_ASM)
        gate = tl.dot(b1_dec, a_dec, gate)
        up = tl.dot(b2_dec, a_dec, up)
    c_offs = (batch * M + rows_a).to(tl.int64)[:, None] * N + rows_b[None, :]
    c_mask = (rows_a < M)[:, None] & (rows_b < N)[None, :]
    if SPLIT:
        tile_id = batch * tiles_m * tl.cdiv(N, BN) + tile
        local = tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :]
        base = ws_ptr + tile_id.to(tl.int64) * (SPLIT_K * 2 * BM * BN)
        tl.store(base + (2 * split) * (BM * BN) + local, gate)
        tl.store(base + (2 * split + 1) * (BM * BN) + local, up)
        tl.debug_barrier()
        arrived = tl.atomic_add(cnt_ptr + tile_id, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            gate = tl.zeros((BN, BM), dtype=tl.float32)
            up = tl.zeros((BN, BM), dtype=tl.float32)
            # Four parts' loads in flight at once (unrolled), still added in split order.
            for part in tl.range(0, SPLIT_K, loop_unroll_factor=4):
                gate += tl.load(base + (2 * part) * (BM * BN) + local, cache_modifier=".cg")
                up += tl.load(base + (2 * part + 1) * (BM * BN) + local, cache_modifier=".cg")
            _epilogue(c_ptr, c_offs, c_mask, gate, up)
            tl.atomic_xchg(cnt_ptr + tile_id, 0, sem="relaxed", scope="gpu")
    else:
        _epilogue(c_ptr, c_offs, c_mask, gate, up)


_SCRATCH: dict = {}


def _scratch(device: torch.device, ws_elems: int, tiles: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Split-K workspace and zeroed counters, kept across calls (the kernel re-zeroes counters)."""
    key = (str(device), ws_elems, tiles)
    if key not in _SCRATCH:
        if len(_SCRATCH) > 16:
            _SCRATCH.clear()
        _SCRATCH[key] = (
            torch.empty(max(ws_elems, 1), dtype=torch.float32, device=device),
            torch.zeros(max(tiles, 1), dtype=torch.int32, device=device),
        )
    return _SCRATCH[key]


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return NUM_SMS_DEFAULT


def pick_split_k(tiles: int, steps: int, slots: int, max_split: int = 16, min_steps: int = 4) -> int:
    """Split K until the tiles fill the GPU's ``slots`` (SMs x resident programs per SM).

    Minimises waves x (K steps per program + 2 for the fix-up), keeping >= ``min_steps`` steps.
    """
    best, best_cost = 1, None
    for split in range(1, max_split + 1):
        per = -(-steps // split)
        if split > 1 and per < min_steps:
            break
        waves = -(-tiles * split // slots)
        cost = waves * (per + (2 if split > 1 else 0))
        if best_cost is None or cost < best_cost:
            best, best_cost = split, cost
    return best


def _bytes(packed: torch.Tensor) -> torch.Tensor:
    """(rows, K/2, L) fp4x2 or e4m3 view of (L, rows, cols) storage -> (L, rows, cols) uint8."""
    return packed.view(torch.uint8).permute(2, 0, 1).contiguous()


# Tuned on the H100 (scripts/tune_nvfp4.py, docs/baselines.md, 2026-11-27); ctas_per_sm is how many
# programs fit on one SM. Two programs of 64 B rows an SM: 68.0 / 114.3 / 43.0 / 110.9 us (50.6% of
# SOL) against 45.3% with one (its split picked for one program an SM).
DEFAULT_CONFIG = {
    "block_m": 128,
    "block_n": 64,
    "block_k": 128,
    "num_warps": 4,
    "num_stages": 2,
    "ctas_per_sm": 2,
    "scale_words": True,
}
INTERPRETER_CONFIG = {
    "block_m": 128,
    "block_n": 128,
    "block_k": 128,
    "num_warps": 4,
    "num_stages": 1,
    "ctas_per_sm": 1,
    "scale_words": True,
}
PREDECODE_ROWS = 32


def dual_gemm(data: input_t, split_k: int | None = None, use_asm: bool | None = None, **config: int) -> output_t:
    """Run the kernels; ``config`` overrides DEFAULT_CONFIG keys, ``split_k=None`` picks from the grid."""
    a, b1, b2, sfa, sfb1, sfb2, _, _, _, c = data
    m, half_k, batches = a.shape
    n = b1.shape[0]
    k = 2 * half_k
    interpreted = not a.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"
    if unknown := set(config) - set(DEFAULT_CONFIG):
        raise TypeError(f"unknown configuration keys {sorted(unknown)}: choose from {sorted(DEFAULT_CONFIG)}")
    cfg = {**(INTERPRETER_CONFIG if interpreted else DEFAULT_CONFIG), **config}
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    if bk % 64:
        raise ValueError(f"block_k {bk} is not a multiple of 64 (the tile's K order spans whole 64-code blocks)")
    asm = (not interpreted) if use_asm is None else use_asm
    pdl = not interpreted  # programmatic dependent launch (sm_90): the main kernel starts during the pre-pass
    rows = batches * m
    padded_k = triton.cdiv(k, bk) * bk
    a_dec = torch.empty((rows, padded_k), dtype=torch.float16, device=a.device)
    _predecode_kernel[(triton.cdiv(rows, PREDECODE_ROWS), padded_k // bk)](
        _bytes(a),
        _bytes(sfa),
        a_dec,
        rows,
        k,
        padded_k,
        R=PREDECODE_ROWS,
        BK=bk,
        ROW_MASK=rows % PREDECODE_ROWS != 0,
        K_MASK=k % bk != 0,
        USE_ASM=asm,
        PDL=pdl,
        num_warps=4,
    )
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    steps = triton.cdiv(k, bk)
    split = split_k or pick_split_k(tiles * batches, steps, _num_sms(a.device) * cfg["ctas_per_sm"])
    ws, counters = _scratch(a.device, batches * tiles * split * 2 * bm * bn if split > 1 else 0, batches * tiles)
    target = c.permute(2, 0, 1)
    if not target.is_contiguous():
        target = torch.empty((batches, m, n), dtype=torch.float16, device=c.device)
    _dual_gemm_kernel[(tiles * split, batches)](
        TensorDescriptor.from_tensor(a_dec, [bm, bk]),
        TensorDescriptor.from_tensor(_bytes(b1), [1, bn, bk // 2]),
        _bytes(sfb1),
        TensorDescriptor.from_tensor(_bytes(b2), [1, bn, bk // 2]),
        _bytes(sfb2),
        target,
        ws,
        counters,
        m,
        n,
        k,
        batches,
        BM=bm,
        BN=bn,
        BK=bk,
        SPLIT_K=split,
        SPLIT=split > 1,
        N_MASK=n % bn != 0,
        K_MASK=k % bk != 0,
        SCALE_WORDS=cfg["scale_words"] and k % bk == 0 and bk in (64, 128),
        USE_ASM=asm,
        COMPILED=not interpreted,
        WARPS=cfg["num_warps"],
        PDL=pdl,
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
        **({"launch_pdl": True} if pdl else {}),
    )
    if target.data_ptr() != c.data_ptr():
        c.copy_(target.permute(1, 2, 0))
    return c


def custom_kernel(data: input_t) -> output_t:
    return dual_gemm(data)
