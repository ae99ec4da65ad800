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

On CUDA the same function is one fused Triton kernel for all of a draw's streams
(:func:`_words_triton`): uint32 arithmetic, where multiplication wraps mod 2^32 by definition,
in registers, one store per word.
Triton is imported only there; without it CUDA falls back to the torch evaluation.

Bytes are the words' little-endian bytes in order; e4m3 and e8m0 scales come from one word each
through an integer inverse-CDF table (:class:`ScaleTable`).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from problems.shared.kernel_tables import device_table, launch_grid, on_device
from reference.formats import E4M3, E8M0
from reference.triton_cache import prepare_triton

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


CPU_CHUNK_WORDS = 1 << 14
"""On the CPU a large draw is hashed in pieces of this many words: every pass stays in cache
(128 KiB of int64), and each operation stays below torch's parallel grain size (32768
elements), where threads would only add synchronization (measured on one core: about 1.3x
faster than 8192 or 32768 on a 2432 x 4608 x 2 GEMV draw)."""


def hash_words(counters: torch.Tensor, k0: int | torch.Tensor, k1: int | torch.Tensor) -> torch.Tensor:
    """The stream's 32-bit words as int32 bit patterns: mix32(mix32(counter ^ k0) ^ k1).

    ``counters`` (int64) is overwritten; keys are scalars or one per word. The last step maps
    [0, 2^32) onto int32's range without overflow ((x ^ 2^31) - 2^31 is x - 2^32 when x >= 2^31,
    else x): the int32 holds exactly the word's 32 bits.
    """
    words = mix32(mix32(counters.bitwise_xor_(k0)).bitwise_xor_(k1))
    return words.bitwise_xor_(1 << 31).sub_(1 << 31).to(torch.int32)


def _words_on_cpu(seed: int, streams: Sequence[tuple[str, int]]) -> list[torch.Tensor]:
    """One stream at a time, in cache-sized pieces, with the stream's keys as scalars."""
    out = []
    for name, count in streams:
        k0, k1 = stream_keys(seed, name)
        words = torch.empty(count, dtype=torch.int32)
        for start in range(0, count, CPU_CHUNK_WORDS):
            stop = min(start + CPU_CHUNK_WORDS, count)
            words[start:stop] = hash_words(torch.arange(start, stop, dtype=torch.int64), k0, k1)
        out.append(words)
    return out


def _words_batched(seed: int, streams: Sequence[tuple[str, int]], device: torch.device) -> list[torch.Tensor]:
    """All streams in one pass over one buffer, each word's keys gathered from a per-stream table.

    A few dozen kernel launches whatever the number of streams (a grouped GEMM has 4 per group).
    The table is a few dozen bytes from the host, pinned and copied asynchronously, so drawing
    inputs never waits for work already queued on the GPU.
    """
    counts = [count for _, count in streams]
    starts = list(itertools.accumulate(counts, initial=0))[:-1]
    keys = [stream_keys(seed, name) for name, _ in streams]
    host = torch.tensor([starts, *zip(*keys)], dtype=torch.int64)  # rows: start, k0, k1
    table = host.pin_memory().to(device, non_blocking=True) if device.type == "cuda" else host.to(device)
    total = sum(counts)
    stream_of_word = torch.repeat_interleave(_device_counts(tuple(counts), device), output_size=total)
    start, k0, k1 = (row.index_select(0, stream_of_word) for row in table.unbind(0))
    words = hash_words(torch.arange(total, dtype=torch.int64, device=device).sub_(start), k0, k1)
    return [piece.clone() for piece in words.split(counts)] if len(counts) > 1 else [words]


TRITON_BLOCK_WORDS = 1024
"""Words per codes_kernel program (8 per thread at 4 warps)."""
HASH_BLOCK_WORDS = 4096
"""Words per hash_kernel program (16 per thread at 8 warps): on the H100 its blocks of 1024 took 48.9 us for the
GEMV's first draw and 74.0 for the grouped GEMM's, 4096 took 33.4 and 62.0 (docs/results.md runs 34-35)."""
HASH_OPTIONS = {"BLOCK": HASH_BLOCK_WORDS, "num_warps": 8}
"""hash_kernel's constants and launch options: every launch and the compile ahead (compile_kernels) take them."""


@functools.cache
def _triton_kernels():
    """The fused hash and scale-code kernels (problems/shared/rng_kernels.py), imported on first use;
    None where triton cannot be imported."""
    prepare_triton()
    try:
        from problems.shared.rng_kernels import codes_kernel, hash_kernel
    except ImportError:
        return None
    return hash_kernel, codes_kernel


def _hash_triton(keyed: Sequence[tuple[int, int, int]], device: torch.device,
                 names: Sequence[str] = ()) -> list[torch.Tensor]:
    """Per (count, k0, k1): words 0..count-1 under those keys (``hash_words(arange(count), k0, k1)``),
    each in its own tensor, all streams in one kernel launch; ``names``: the streams' (for a capture).

    The kernel finds each stream's tensor through a table of addresses (a few dozen bytes from the
    host, pinned and copied asynchronously, as in ``_words_batched``): one launch whatever the
    number of streams (a grouped GEMM of 8 groups has 32), no copy of any stream.
    """
    words = [torch.empty(count, dtype=torch.int32, device=device) for count, _, _ in keyed]
    rows = [(w.data_ptr(), count, k0, k1) for w, (count, k0, k1) in zip(words, keyed) if count]
    if rows:
        kept = [name for name, (count, _, _) in zip(names, keyed) if count]
        table = device_table(rows, device, {HASH_ROW_BYTES * i + HASH_KEY_OFFSET: name for i, name in enumerate(kept)})
        with on_device(device):
            _triton_kernels()[0][launch_grid(rows, 1, HASH_BLOCK_WORDS)](table, **HASH_OPTIONS)
    return words


HASH_ROW_BYTES, HASH_KEY_OFFSET = 32, 16
"""hash_kernel's table row: (address, count, k0, k1) as int64; the keys from byte 16 of a row."""


def _words_triton(seed: int, streams: Sequence[tuple[str, int]], device: torch.device) -> list[torch.Tensor]:
    """Every stream in one Triton kernel, each writing its own tensor (the CUDA path; on the CPU
    only under ``TRITON_INTERPRET=1``, which the tests use)."""
    return _hash_triton([(count, *stream_keys(seed, name)) for name, count in streams], device,
                        [name for name, _ in streams])


def random_words(seed: int, streams: Sequence[tuple[str, int]], device: torch.device | str) -> list[torch.Tensor]:
    """Words 0..count-1 of each named stream: int32 tensors (one word's bits each) on ``device``.

    Stream ``name``'s words depend on the seed, the name and the word's index only, not on the
    other streams or their sizes. The helpers evaluate the same ``hash_words``, in the order
    that runs fastest: one fused Triton kernel for all streams on CUDA (the batched torch evaluation
    where triton is missing), batched for small draws on the CPU, stream by stream in
    cache-sized pieces for large ones; the integers are the same (tests compare them).
    """
    device = torch.device(device)
    counts = [count for _, count in streams]
    if any(count > MAX_WORDS for count in counts):
        raise ValueError(f"a stream holds at most {MAX_WORDS} 32-bit words, {max(counts)} were asked for")
    if device.type == "cpu" and sum(counts) > CPU_CHUNK_WORDS:
        return _words_on_cpu(seed, streams)
    if device.type == "cuda" and _triton_kernels() is not None:
        return _words_triton(seed, streams, device)
    return _words_batched(seed, streams, device)


def compile_kernels() -> list:
    """Compile both Triton kernels and build their launchers for the active Triton driver's target,
    without running them (no CUDA context needed): the calls a draw makes then find them compiled.
    A worker started before its file comes does it (harness/worker/compile_ahead.py; 1.4-2.0 s of
    every leaderboard file's worker start on the H100 went to compiling them at Start, results.md run
    21). The scale codes' kernel is compiled for the NVFP4 problems' table depth. Returns the compiled
    kernels ([] without triton)."""
    kernels = _triton_kernels()
    if kernels is None:
        return []
    from triton.runtime import driver

    hash_kernel, codes_kernel = kernels
    table = ScaleTable.build(-8.0, 0.0)
    depth = _device_buckets(table.thresholds, table.first_code, torch.device("cpu"))[1].shape[0]
    compiled = [
        hash_kernel.warmup(torch.int64, grid=(1,), **HASH_OPTIONS),
        codes_kernel.warmup(torch.int64, torch.uint8, torch.int32, grid=(1,), **codes_options(depth)),
    ]
    for kernel in compiled:  # a launcher is built on first launch; built now, its compiled module is cached
        driver.active.launcher_cls(kernel.src, kernel.metadata)
    return compiled


def words_to_bytes(words: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Uniform bytes (uint8, ``shape``): the little-endian bytes of the int32 ``words`` in order.

    A view of the words' storage: CPU and CUDA are both little-endian, so byte 4i + j is bits
    8j..8j+7 of word i on either.
    """
    count = math.prod(shape)
    if words.numel() * 4 < count:
        raise ValueError(f"{words.numel()} words hold {words.numel() * 4} bytes, {count} were asked for")
    return words.view(torch.uint8)[:count].reshape(shape)


SCALE_CODES: dict[torch.dtype, range] = {E4M3: range(1, 0x7F), E8M0: range(0, 0xFF)}
"""The positive finite codes of each table-drawn scale format, in increasing order of value."""


@dataclass(frozen=True)
class ScaleTable:
    """Integer inverse CDF of fmt(2**u), u uniform on [log2_min, log2_max], fmt e4m3 or e8m0.

    Word r (uniform on [0, 2^32)) stands for u_r = log2_min + (log2_max - log2_min) * (r + 1/2) / 2^32,
    and the scale is the format's value nearest 2**u_r (an exact midpoint, which no r hits for the
    shipped ranges, would round up). ``thresholds[j]`` counts the words whose 2**u_r lies below
    the midpoint between the format's positive values j and j+1 (codes first_code + j and
    first_code + j + 1), so the code of word r is first_code + (number of thresholds <= r): an
    exact integer search on any device. The thresholds are computed once on the host in float64.
    """

    log2_min: float
    log2_max: float
    thresholds: tuple[int, ...]
    first_code: int = 1
    dtype: torch.dtype = E4M3

    @classmethod
    def build(cls, log2_min: float, log2_max: float, dtype: torch.dtype = E4M3) -> ScaleTable:
        if not log2_min < log2_max:
            raise ValueError(f"scale_log2 must be an increasing [min, max] pair, got [{log2_min}, {log2_max}]")
        if dtype not in SCALE_CODES:
            raise ValueError(f"scale tables exist for {list(SCALE_CODES)}, not {dtype}")
        codes = SCALE_CODES[dtype]
        values = torch.tensor(list(codes), dtype=torch.uint8).view(dtype).double().tolist()
        if not (values[0] <= 2.0**log2_min and 2.0**log2_max <= values[-1]):
            raise ValueError(f"scale_log2 [{log2_min}, {log2_max}] leaves {dtype}'s range "
                             f"[{values[0]:g}, {values[-1]:g}]")
        span = log2_max - log2_min
        thresholds = []
        for low, high in itertools.pairwise(values):
            # Count of integers r >= 0 with r + 1/2 < WORD_RANGE * (log2(mid) - log2_min) / span.
            position = WORD_RANGE * (math.log2((low + high) / 2) - log2_min) / span
            thresholds.append(min(max(math.ceil(position - 0.5), 0), WORD_RANGE))
        return cls(float(log2_min), float(log2_max), tuple(thresholds), codes[0], dtype)

    def codes(self, words: torch.Tensor) -> torch.Tensor:
        """Scale codes (uint8) of int32 words (bits of r): first_code + (number of thresholds <= r).

        Counted through a lookup on r's top ``BUCKET_BITS`` bits (the count up to the bucket's
        start) plus one comparison of r's low bits per threshold inside the bucket: gathers and
        integer compares, exact on every device and far faster than a binary search. On CUDA
        (1-D contiguous words, triton importable) one fused kernel does the same lookups.
        """
        below, inside = _device_buckets(self.thresholds, self.first_code, words.device)
        if _fused(words):
            return _codes_triton([words], below, inside)[0]
        bucket = (words >> (32 - BUCKET_BITS)).bitwise_and_((1 << BUCKET_BITS) - 1)
        low = words & ((1 << (32 - BUCKET_BITS)) - 1)
        codes = below.index_select(0, bucket)
        for column in inside:
            codes += low >= column.index_select(0, bucket)
        return codes

    def scales(self, words: Sequence[torch.Tensor], shapes: Sequence[tuple[int, ...]]) -> list[torch.Tensor]:
        """Scales of each shape in the table's format, from one word each (own storage); on CUDA
        the codes of all of them in one kernel launch."""
        if words and all(_fused(w) for w in words):
            codes = _codes_triton(list(words), *_device_buckets(self.thresholds, self.first_code, words[0].device))
        else:
            codes = [self.codes(w) for w in words]
        return [c.reshape(shape).view(self.dtype) for c, shape in zip(codes, shapes)]


def _fused(words: torch.Tensor) -> bool:
    """Whether the codes of ``words`` come from the Triton kernel: 1-D contiguous, on CUDA, triton there."""
    return words.device.type == "cuda" and words.dim() == 1 and words.is_contiguous() and bool(_triton_kernels())


BUCKET_BITS = 12
"""ScaleTable.codes looks words up in 2^12 buckets of 2^20 words each."""


def codes_options(depth: int) -> dict[str, int]:
    """codes_kernel's constants and launch options for a table of ``depth`` rows a bucket (as HASH_OPTIONS)."""
    return {"BLOCK": TRITON_BLOCK_WORDS, "DEPTH": depth, "BUCKETS": 1 << BUCKET_BITS, "LOW_BITS": 32 - BUCKET_BITS,
            "num_warps": 4}


@functools.lru_cache(maxsize=64)
def _device_buckets(
    thresholds: tuple[int, ...], first_code: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per bucket: first_code + thresholds at or below its first word (uint8), and the low bits of the
    thresholds strictly inside it (int32, shape (depth, buckets); one row per threshold a bucket
    can hold, padded with 2^(32 - BUCKET_BITS), which no low part reaches). Built on the host
    once per device.
    """
    width = 1 << (32 - BUCKET_BITS)
    below, inside = [], []
    for bucket in range(1 << BUCKET_BITS):
        start = bucket * width
        first_inside = bisect.bisect_right(thresholds, start)
        below.append(first_code + first_inside)
        within = thresholds[first_inside : bisect.bisect_left(thresholds, start + width)]
        inside.append([t - start for t in within])
    depth = max(1, *(len(row) for row in inside))
    padded = [row + [width] * (depth - len(row)) for row in inside]
    columns = torch.tensor(padded, dtype=torch.int32).T.contiguous()
    return torch.tensor(below, dtype=torch.uint8, device=device), columns.to(device)


def _codes_triton(words: list[torch.Tensor], below: torch.Tensor, inside: torch.Tensor) -> list[torch.Tensor]:
    """ScaleTable.codes of each 1-D contiguous int32 tensor (uint8, own storage), all in one launch."""
    codes = [torch.empty(w.shape, dtype=torch.uint8, device=w.device) for w in words]
    rows = [(w.data_ptr(), c.data_ptr(), w.numel()) for w, c in zip(words, codes) if w.numel()]
    if rows:
        device = words[0].device
        with on_device(device):
            table = device_table(rows, device)
            _triton_kernels()[1][launch_grid(rows, 2, TRITON_BLOCK_WORDS)](table, below, inside,
                                                                         **codes_options(inside.shape[0]))
    return codes


@functools.lru_cache(maxsize=256)
def _device_counts(counts: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """Stream sizes on ``device``, copied there once per shape, not on every call."""
    return torch.tensor(counts, dtype=torch.int64, device=device)
