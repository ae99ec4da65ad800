#!POPCORN leaderboard nvfp4_gemm
#!POPCORN author harness-baselines
"""NVFP4 block-scaled GEMM in Triton: e2m1 and e4m3 decoded in registers, fp16 tensor-core dots.

What it does, in two launches: a small kernel decodes A (the M x K activations, M = 128 in the
contest's benchmarks) once to fp16 in the tile's K order (below); the GEMM kernel computes the transposed
product C^T = B A^T, so the large operand B (N x K weights) is decoded in registers and fed to
wgmma as its register operand, and the fp16 A tile reaches wgmma in shared memory with no decode
at all. Per K step a program loads BK codes of BN rows of B as bytes, decodes them (block scale
applied), and does one fp16 dot with fp32 accumulation. Both tiles arrive by TMA (tensor
descriptors, pipelined over ``num_stages``). The GEMM kernel is launched as the pre-pass's
programmatic dependent (PDL, sm_90): the pre-pass triggers it as each of its programs ends, so its
launch and start overlap the pre-pass's tail instead of following it on the stream; it waits
(``gdc_wait``) for the whole of A before its K loop. A trigger at the pre-pass's start let the GEMM's
programs take the SMs the pre-pass's later programs needed: 24% slower on the K = 2048 shape
(docs/results.md run 27 call 6).

The tile's K order (``_decode_tile``): within each BK columns, position 8 j + 2 q + h holds nibble
j % 2 of byte BK / 8 q + 2 (j // 2) + h. wgmma's register operand gives lane q (mod 4) the element pairs
at positions 2 q + 8 j; in this order those pairs are one quarter row of consecutive bytes, each f16x2
register the same nibble of two neighbouring bytes, so the bytes come from shared memory in one vector
load and decode straight into wgmma's layout. A is stored in the same order, so the dot sums the same
products. Each step's bytes pass through a wgmma wait (``_after_wgmma``): without it the decode wrote the
registers of wgmmas still in flight and C read inf (docs/results.md run 40). The tile's row order (``_row_order``)
does the same for rows, whose split between warps otherwise differs; C is stored through it. With
both, the loop has no shared-memory round trip and ptxas keeps the wgmmas asynchronous
(tests/test_triton_baselines_ptx.py checks the compiled loop: no shared-memory store, no ldmatrix, no
write to a register of a wgmma in flight).

Why this design (Hopper has no FP4 tensor cores; docs/baselines.md has the Nsight Compute
profile): decoding both operands per tile and sending the decoded B through shared memory cost
5.6 million shared stores, barrier and scoreboard stalls and 1 warp in 5.6 cycles issuing. Here
only B's decode passes through registers, A is decoded once for all N tiles, and two programs
of 4 warps share an SM (faster than one of 8 warps: DEFAULT_CONFIG; that one program's decode hides
under the other's wgmma was the intent, but run 41 measured the two adding up, "What bounds it" below).

Exactness: fp16 bits ((n & 7) << 9) | ((n & 8) << 12) equal e2m1(n) * 2^-14 (subnormals
included), and multiplying by the e4m3 scale in fp16 gives e2m1 * scale * 2^-14 exactly (at most
6 significant bits, 6 * 448 * 2^-14 < 1). One PTX snippet decodes 4 bytes (8 codes) at once
(``_decode_asm``: word-wide shifts and masks, byte permutes, f16x2 multiplies); the low (even k)
and high (odd k) nibble planes are joined into the tile's K order. The fp32 accumulator is scaled by 2^28 once.
When the tile grid cannot fill the GPU, K is split across programs; the last program to finish
a tile (an atomic counter) adds the fp32 partials in a fixed order and writes C, in the same
launch. Under the CPU interpreter (``TRITON_INTERPRET=1``) the decode runs in plain Triton.

Measured through ``harness eval``, ranked: 45.0% of the Hopper speed of light on the H200 with the
fix-up's sum unrolled (docs/results.md run 42, 2026-11-28), 44.6% with the byte-parallel decode
(run 41; 42.8% before it on the same GPU); on the H100
(run 40) 41.9-42.8% before it (geomean; 41.3% with each register holding both nibbles of one byte; run 27:
40.7-40.9% in benchmark mode with PDL, 38.6-38.7% without; 26.2% while the
decoded B went through shared memory to reach wgmma's layout and ptxas serialised the wgmmas, 20.3%
with cp.async, 12.8% before the pre-pass).
What bounds it: the M = 128 shapes give 56-112 output tiles for 132 SMs, so K is split and the
fix-up costs about 9 K steps; and a K step costs its wgmmas plus its decode: in a hand-written kernel that
decodes the next step while this step's wgmmas run, the decode's time still added to the wgmmas' on the H200
(docs/baselines.md, run 41), so the decode's instruction count is what to cut.
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
    BK: tl.constexpr,  # the GEMM kernel's BK: the span of the tile's K order
    ROW_MASK: tl.constexpr,
    K_MASK: tl.constexpr,
    USE_ASM: tl.constexpr,
    PDL: tl.constexpr,  # the GEMM kernel is launched as this one's programmatic dependent
):
    rows = tl.program_id(0) * R + tl.arange(0, R)
    k0 = tl.program_id(1) * BK
    s = _load_scales(sa_ptr, rows, ROWS, 0, k0, K, R, BK, ROW_MASK, K_MASK, False)
    vals = _load_decode(a_ptr, s, rows, ROWS, 0, k0, K, R, BK, ROW_MASK, K_MASK, USE_ASM)
    offs = rows.to(tl.int64)[:, None] * KP + (k0 + tl.arange(0, BK))[None, :]
    tl.store(out_ptr + offs, vals, mask=(rows < ROWS)[:, None])
    if PDL:  # at the end: the GEMM's programs, started sooner, would take the SMs this kernel's later programs need
        tl.extra.cuda.gdc_launch_dependents()


# SPLIT_K is never specialised: Triton would compile a split of 1 as a kernel of its own.
@triton.jit(do_not_specialize=["SPLIT_K"])
def _gemm_kernel(
    ad_desc,  # (L * M, KP) fp16 A from _predecode_kernel (the tile's K order): descriptor of (BM, BK) boxes
    b_desc,  # (L, N, K/2) uint8: descriptor of (1, BN, BK/2) boxes
    sb_ptr,  # (L, N, K/16) uint8 e4m3
    c_ptr,  # (L, M, N) fp16
    ws_ptr,  # fp32 split-K partials: (L * tiles, SPLIT_K, BM, BN)
    cnt_ptr,  # int32 per-tile arrival counters, zero between launches
    M,
    N,
    K,
    L,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    SPLIT_K,  # programs a tile's K is split over (never specialised: one compiled kernel for every split)
    N_MASK: tl.constexpr,  # N % BN != 0
    K_MASK: tl.constexpr,  # K % BK != 0
    SCALE_WORDS: tl.constexpr,  # load scales as words (see _load_scales)
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
    acc = tl.zeros((BN, BM), dtype=tl.float32)  # C^T tile: B is wgmma's register operand
    if PDL:
        tl.extra.cuda.gdc_wait()  # the pre-pass's A is complete and visible from here
    for step in range(first, last):  # TMA copies pipelined num_stages deep (the launch's option)
        k0 = step * BK
        # TMA boxes read zeros past N and K; A's rows past M (the next batch's, or zeros) reach
        # only rows of C past M, which are never stored.
        sb = _load_scales(sb_ptr, rows_b, N, batch * N, k0, K, BN, BK, N_MASK, K_MASK, SCALE_WORDS)
        b_bytes = _rows_in_order(b_desc.load([batch, tn * BN, k0 // 2]), BN, BK, WARPS)
        if COMPILED:
            b_bytes = _after_wgmma(b_bytes)
        b_dec = _decode_tile(b_bytes, sb, BN, BK, USE_ASM)
        acc = tl.dot(b_dec, tl.trans(ad_desc.load([batch * M + tm * BM, k0])), acc)
    if SPLIT_K == 1:
        _store_c(c_ptr, acc, rows_a, rows_b, batch, M, N)
    else:
        # Each program leaves its fp32 partials; the last to arrive sums them in a fixed order and stores C.
        tile_id = batch * tiles_m * tl.cdiv(N, BN) + tile
        local = tl.arange(0, BN)[:, None] * BM + tl.arange(0, BM)[None, :]
        base = ws_ptr + tile_id.to(tl.int64) * (SPLIT_K * BN * BM)
        tl.store(base + split * (BN * BM) + local, acc)
        tl.debug_barrier()
        arrived = tl.atomic_add(cnt_ptr + tile_id, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            acc = tl.zeros((BN, BM), dtype=tl.float32)
            # Four parts' loads in flight at once (unrolled), still added in split order.
            for part in tl.range(0, SPLIT_K, loop_unroll_factor=4):
                acc += tl.load(base + part * (BN * BM) + local, cache_modifier=".cg")
            _store_c(c_ptr, acc, rows_a, rows_b, batch, M, N)
            tl.atomic_xchg(cnt_ptr + tile_id, 0, sem="relaxed", scope="gpu")


@triton.jit
def _store_c(c_ptr, acc, rows_a, rows_b, batch, M, N):
    """A C^T tile (rows of B, rows of A; operands carried 2^-14 each) -> fp16 C, rows past M or N left alone."""
    acc = tl.trans(acc) * 268435456.0
    c_offs = (batch * M + rows_a).to(tl.int64)[:, None] * N + rows_b[None, :]
    tl.store(c_ptr + c_offs, acc.to(tl.float16), mask=(rows_a < M)[:, None] & (rows_b < N)[None, :])


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


def pick_split_k(
    tiles: int, steps: int, slots: int, max_split: int = 16, min_steps: int = 4, fixup_steps: int = 9
) -> int:
    """Split K until the tiles fill the GPU's ``slots`` (SMs x resident programs per SM).

    Minimises waves x (K steps per program + ``fixup_steps`` for the fix-up), keeping >= ``min_steps``
    steps. The fix-up (a tile's fp32 partials written, then read back and summed by the last
    program) measured as about 9 K steps on the H100: splits of 2 / 4 / 1 on the contest's
    three shapes (66 / 25 / 15 us, docs/baselines.md), where a cost of 2 picked 7 / 4 / 2.
    """
    best, best_cost = 1, None
    for split in range(1, max_split + 1):
        per = -(-steps // split)
        if split > 1 and per < min_steps:
            break
        waves = -(-tiles * split // slots)
        cost = waves * (per + (fixup_steps if split > 1 else 0))
        if best_cost is None or cost < best_cost:
            best, best_cost = split, cost
    return best


def _bytes(packed: torch.Tensor) -> torch.Tensor:
    """(rows, K/2, L) fp4x2 or e4m3 view of (L, rows, cols) storage -> (L, rows, cols) uint8."""
    return packed.view(torch.uint8).permute(2, 0, 1).contiguous()


# Tuned on the H100 (scripts/tune_nvfp4.py, docs/baselines.md, 2026-11-27); ctas_per_sm is how many
# programs fit on one SM. 67.4 / 24.7 / 14.8 us (40.2% of SOL) against 75.9 / 27.3 / 21.6 (32.9%) for
# BN 128 on 8 warps, one program an SM.
DEFAULT_CONFIG = {
    "block_m": 128,
    "block_n": 64,
    "block_k": 128,
    "num_warps": 4,
    "num_stages": 3,
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


def gemm(data: input_t, split_k: int | None = None, use_asm: bool | None = None, **config: int) -> output_t:
    """Run the kernels; ``config`` overrides DEFAULT_CONFIG keys, ``split_k=None`` picks from the grid."""
    a, b, sfa, sfb, _, _, c = data
    m, half_k, batches = a.shape
    n = b.shape[0]
    k = 2 * half_k
    interpreted = not a.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"
    if unknown := set(config) - set(DEFAULT_CONFIG):
        raise TypeError(f"unknown configuration keys {sorted(unknown)}: choose from {sorted(DEFAULT_CONFIG)}")
    cfg = {**(INTERPRETER_CONFIG if interpreted else DEFAULT_CONFIG), **config}
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    if bk % 64:
        raise ValueError(f"block_k {bk} is not a multiple of 64 (the tile's K order spans whole 64-code blocks)")
    asm = (not interpreted) if use_asm is None else use_asm
    pdl = not interpreted  # programmatic dependent launch (sm_90): the GEMM kernel's launch hides behind the pre-pass
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
    ws, counters = _scratch(a.device, batches * tiles * split * bm * bn if split > 1 else 0, batches * tiles)
    target = c.permute(2, 0, 1)
    if not target.is_contiguous():
        target = torch.empty((batches, m, n), dtype=torch.float16, device=c.device)
    _gemm_kernel[(tiles * split, batches)](
        TensorDescriptor.from_tensor(a_dec, [bm, bk]),
        TensorDescriptor.from_tensor(_bytes(b), [1, bn, bk // 2]),
        _bytes(sfb),
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
    return gemm(data)
