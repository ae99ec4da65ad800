"""A hand-written NVFP4 GEMM for Hopper (CUDA C++, sm_90a): the measuring instrument of decode_overlap_probe.py.

Not a baseline: it reads 33.8% of the speed of light ranked on the H200 against the Triton GEMM's 42.8%
(docs/baselines.md, "The decode on four bytes at once; decode and wgmma do not overlap"). It is kept
because its loop is written out by hand, so single parts of it (the decode, the wgmma's operand source,
the order of the two warpgroups' issues) can be swapped by text and timed, which Triton's generated loop
does not allow.

The design: a pre-pass decodes A (M x K) once to fp16, written tile by tile as the exact image of shared
memory the GEMM wants (128-byte swizzle, the operand K order below), so one bulk copy (``cp.async.bulk``)
fetches each 32 KB stage; the GEMM computes C^T = B A^T with B's bytes and scales loaded from global
memory straight to registers two steps ahead and decoded into wgmma's register operand, double-buffered
(the next step's decode runs while this step's wgmmas do; each buffer is kept live up to its wgmma's
wait, so ptxas cannot hand its registers to the next decode early). A CTA is two warpgroups of 64 B rows
sharing one A stage, taking turns to issue their wgmmas (named barriers). Split-K partials are summed in
split order by a tile's last CTA (an atomic counter): deterministic.

The operand K order: in each 128 codes of a step, wgmma position 16 c + 8 h + 2 t + e (chunk c < 8,
half h, lane t = lane % 4, element e) holds code 32 t + 8 (c // 2) + 2 (c % 2) + h + 4 e, so lane t reads
a row's bytes 16 t .. 16 t + 15 in one load and each word gives four f16x2 registers, register i holding
nibbles i and i + 4 (one shift for both halves). A is stored in the same order.

Exactness as the Triton GEMM's: fp16 bits ((n & 7) << 9) | ((n & 8) << 12) are e2m1(n) * 2^-14, times
the e4m3 scale exact in fp16; A's e2m1 * scale exact; the fp32 accumulator is scaled by 2^14 once.
Correct on every test and benchmark shape of nvfp4_gemm and clean under memcheck on the five test shapes
that ran (docs/results.md run 41). Needs M % 128, N % 128, K % 128 == 0 and L == 1.
"""

from typing import Any

import torch

BM, BN, BK = 128, 128, 128  # A rows (wgmma N), B rows (two warpgroups of 64), codes per K step
STAGES = 4  # A stages of 32 KB in shared memory
THREADS = 256
FIXUP_STEPS = 4  # a split tile's partial store, arrival and sum, in K steps (the split's cost model)


def _wgmma_asm() -> str:
    """The m64n128k16 f32 += f16 (registers) x f16 (shared memory) wgmma, as one inline-asm statement."""
    acc = ", ".join(f"%{i}" for i in range(64))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(64))
    return (
        'asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %69, 0;\\n'
        f"wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{{acc}}}, {{%64, %65, %66, %67}}, %68, p, 1, 1, 0;"
        '\\n}\\n"\n'
        f"    : {outs}\n"
        '    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1));'
    )


CUDA_SRC = r"""
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

namespace {
constexpr int BM = TILE_BM, BN = TILE_BN, BK = TILE_BK, STAGES = TILE_STAGES, THREADS = TILE_THREADS;
constexpr int STAGE_BYTES = BM * BK * 2;  // one A stage: 2 swizzle atoms of 128 rows x 128 bytes

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile("{\n.reg .pred done;\nLAB_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra LAB_WAIT;\n}" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}
// One A stage by one bulk copy, its bytes counted on the stage's full barrier.
__device__ __forceinline__ void copy_stage(void* dst, const void* src, uint64_t* full) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(smem_addr(full)), "r"(STAGE_BYTES) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(smem_addr(dst)), "l"(src), "r"(STAGE_BYTES), "r"(smem_addr(full)) : "memory");
}
// The two warpgroups take turns to issue their wgmmas (named barriers 1 and 2): each decodes while the
// other's wgmmas run, instead of both issuing, then both decoding, with the tensor cores idle meanwhile.
__device__ __forceinline__ void turn_wait(int wg) { asm volatile("bar.sync %0, 256;" :: "r"(1 + wg) : "memory"); }
__device__ __forceinline__ void turn_give(int wg) { asm volatile("bar.arrive %0, 256;" :: "r"(1 + wg) : "memory"); }
// wgmma's shared-memory descriptor: K-major, 128-byte swizzle, 8-row groups 1024 bytes apart.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(1) << 16)
       | (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}
template <int N> __device__ __forceinline__ void fence_operand(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}
__device__ __forceinline__ void fence_acc(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}
__device__ __forceinline__ void wgmma(float (&d)[64], const uint32_t* a, uint64_t desc) {
  WGMMA_ASM
}
// Nibbles i and i + 4 of w as fp16 e2m1 * 2^-14 (low, high half), times the scale pair s.
template <int I> __device__ __forceinline__ uint32_t decode(uint32_t w, uint32_t s) {
  uint32_t sign = w, mag = w >> 3, out;
  if constexpr (I < 3) {
    sign = w << (12 - 4 * I);
    mag = w << (9 - 4 * I);
  }
  const uint32_t bits = (sign & 0x80008000u) | (mag & 0x0E000E00u);
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(out) : "r"(bits), "r"(s));
  return out;
}
// Two e4m3 scales (low byte: the lane's first block) -> fp16 pairs (first, first), (second, second).
__device__ __forceinline__ void scale_pairs(uint32_t raw, uint32_t& lo, uint32_t& hi) {
  uint32_t both;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(both) : "h"(static_cast<uint16_t>(raw)));
  lo = __byte_perm(both, 0, 0x1010);
  hi = __byte_perm(both, 0, 0x3232);
}
struct Bytes { uint4 row0, row1; uint32_t scales; };  // a step's 2 x 16 bytes and 2 x 2 scales of a lane
__device__ __forceinline__ uint4 load16(const uint8_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint32_t load2(const uint8_t* p) {
  uint16_t v;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}
// The 32 operand registers of one step: register 4 c + 2 h + r is chunk c, half h, row r (0: g, 1: g + 8).
__device__ __forceinline__ void decode_step(const Bytes& b, uint32_t (&a)[32]) {
  uint32_t s0[2], s1[2];
  scale_pairs(b.scales & 0xFFFF, s0[0], s0[1]);
  scale_pairs(b.scales >> 16, s1[0], s1[1]);
  const uint32_t w0[4] = {b.row0.x, b.row0.y, b.row0.z, b.row0.w};
  const uint32_t w1[4] = {b.row1.x, b.row1.y, b.row1.z, b.row1.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {  // word j: chunks 2 j, 2 j + 1; register i of the word: chunk 2 j + i / 2, half i % 2
    a[8 * j + 0] = decode<0>(w0[j], s0[j / 2]);
    a[8 * j + 1] = decode<0>(w1[j], s1[j / 2]);
    a[8 * j + 2] = decode<1>(w0[j], s0[j / 2]);
    a[8 * j + 3] = decode<1>(w1[j], s1[j / 2]);
    a[8 * j + 4] = decode<2>(w0[j], s0[j / 2]);
    a[8 * j + 5] = decode<2>(w1[j], s1[j / 2]);
    a[8 * j + 6] = decode<3>(w0[j], s0[j / 2]);
    a[8 * j + 7] = decode<3>(w1[j], s1[j / 2]);
  }
}
}  // namespace

// A (rows x K codes, rows % 128 == 0) -> the GEMM's shared-memory image, one 16-byte chunk a thread:
// [row tile][step][atom (64 positions)][row (128)][16-byte chunk XOR row % 8], positions in the operand K order.
__global__ void predecode_a(const uint8_t* __restrict__ a, const uint8_t* __restrict__ sa, uint4* __restrict__ out,
                            int rows, int K) {
  const long long chunk = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int steps = K / BK;
  if (chunk < static_cast<long long>(rows) * K / 8) {
    const int phys = chunk & 7, row = (chunk >> 3) & 127, atom = (chunk >> 10) & 1;
    const long long rest = chunk >> 11;
    const int step = rest % steps, grow = (rest / steps) * BM + row;
    const int logical_chunk = phys ^ (row & 7);
    const int c = 4 * atom + (logical_chunk >> 1), h = logical_chunk & 1;
    __half v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {  // position 16 c + 8 h + e: lane t = e / 2, element e % 2
      const int k = step * BK + 32 * (e >> 1) + 8 * (c >> 1) + 2 * (c & 1) + h + 4 * (e & 1);
      const uint32_t code = (a[static_cast<long long>(grow) * (K / 2) + k / 2] >> (4 * (k & 1))) & 0xF;
      const uint32_t bits = ((code & 7) << 9) | ((code & 8) << 12);  // e2m1 * 2^-14
      __nv_fp8_e4m3 s;
      s.__x = sa[static_cast<long long>(grow) * (K / 16) + k / 16];
      v[e] = __hmul(__hmul(__ushort_as_half(static_cast<unsigned short>(bits)), __float2half(16384.0f)),
                    static_cast<__half>(s));
    }
    out[chunk] = *reinterpret_cast<const uint4*>(v);
  }
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// C (M x N fp16) = A B^T over split ranges of K; grid: (tiles x split). See the module docstring.
__global__ void __launch_bounds__(THREADS, 1)
gemm_rs(const uint8_t* __restrict__ a_img, const uint8_t* __restrict__ b, const uint8_t* __restrict__ sb,
        __half* __restrict__ c, float* __restrict__ ws, int* __restrict__ counters, int M, int N, int K, int split) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + STAGES * STAGE_BYTES);
  uint64_t* empty = full + STAGES;
  __shared__ int last_arrival;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  const int tiles_m = M / BM, steps = K / BK;
  const int part = blockIdx.x % split, tile = blockIdx.x / split;
  const int tm = tile % tiles_m, tn = tile / tiles_m;
  const int per = (steps + split - 1) / split, first = part * per;
  const int count = min(steps, first + per) - first;

  const long long row0 = static_cast<long long>(tn) * BN + 16 * warp + g;  // warp 4 .. 7: the second 64 rows
  const uint8_t* bp0 = b + row0 * (K / 2) + 16 * t + static_cast<long long>(first) * (BK / 2);
  const uint8_t* bp1 = bp0 + 8ll * (K / 2);
  const uint8_t* sp0 = sb + row0 * (K / 16) + 2 * t + static_cast<long long>(first) * (BK / 16);
  const uint8_t* sp1 = sp0 + 8ll * (K / 16);
  auto load_step = [&](int i, Bytes& out) {
    out.row0 = load16(bp0 + i * (BK / 2));
    out.row1 = load16(bp1 + i * (BK / 2));
    out.scales = load2(sp0 + i * (BK / 16)) | (load2(sp1 + i * (BK / 16)) << 16);
  };
  const uint8_t* a_src = a_img + (static_cast<long long>(tm) * steps + first) * STAGE_BYTES;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], THREADS / 32); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  Bytes bytes[2];
  load_step(0, bytes[0]);  // B does not depend on the pre-pass: fetched before its wait
  if (count > 1) load_step(1, bytes[1]);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (tid == 0)
    for (int s = 0; s < STAGES && s < count; ++s) copy_stage(smem + s * STAGE_BYTES, a_src + s * STAGE_BYTES, &full[s]);

  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  uint32_t ops[2][32];
  decode_step(bytes[0], ops[0]);
  if (count > 2) load_step(2, bytes[0]);

  const uint64_t desc0 = smem_desc(smem_addr(smem));
  // Step i: its wgmmas on cur, then step i + 1 decoded from nb into next, step i + 3's bytes loaded into nb.
  auto step = [&](int i, uint32_t (&cur)[32], uint32_t (&next)[32], Bytes& nb) {
    const int stage = i % STAGES;
    mbar_wait(&full[stage], (i / STAGES) & 1);
    const uint64_t desc = desc0 + stage * (STAGE_BYTES >> 4);  // the address field counts 16-byte units
    turn_wait(wg);
    fence_acc(d);
    fence_operand(cur);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int ch = 0; ch < 8; ++ch) wgmma(d, &cur[4 * ch], desc + ((ch / 4) * (BM * 128) + (ch % 4) * 32) / 16);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    fence_acc(d);
    if (wg == 0 || i + 1 < count) turn_give(1 - wg);  // the other warpgroup's wgmmas queue behind these
    if (i + 1 < count) {  // the next step's decode runs while the wgmmas do
      decode_step(nb, next);
      if (i + 3 < count) load_step(i + 3, nb);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    fence_acc(d);
    fence_operand(cur);  // cur stays allocated until its wgmmas have retired
    if (lane == 0) mbar_arrive(&empty[stage]);
    if (tid == THREADS / 2 && i + STAGES < count) {  // warpgroup 1 retires each step last: it refills the stage
      mbar_wait(&empty[stage], (i / STAGES) & 1);
      copy_stage(smem + stage * STAGE_BYTES, a_src + static_cast<long long>(i + STAGES) * STAGE_BYTES, &full[stage]);
    }
    __syncwarp();
  };
  if (wg == 1) turn_give(0);  // warpgroup 0 issues first
  for (int i = 0; i < count; i += 2) {
    step(i, ops[0], ops[1], bytes[1]);
    if (i + 1 < count) step(i + 1, ops[1], ops[0], bytes[0]);
  }

  // Fragment i of a thread: C^T row (B row) 16 warp + g + 8 ((i / 2) % 2), column (A row) 8 (i / 4) + 2 t + i % 2.
  if (split > 1) {
    float4* mine = reinterpret_cast<float4*>(ws) + (static_cast<long long>(tile) * split + part) * 16 * THREADS;
#pragma unroll
    for (int j = 0; j < 16; ++j)
      mine[j * THREADS + tid] = make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]);
    __threadfence();
    __syncthreads();
    if (tid == 0) last_arrival = atomicAdd(&counters[tile], 1) == split - 1;
    __syncthreads();
    if (!last_arrival) return;
    __threadfence();
    const float4* parts = reinterpret_cast<const float4*>(ws) + static_cast<long long>(tile) * split * 16 * THREADS;
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.0f;
    for (int p = 0; p < split; ++p) {
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const float4 v = __ldcg(parts + (p * 16 + j) * THREADS + tid);
        d[4 * j] += v.x; d[4 * j + 1] += v.y; d[4 * j + 2] += v.z; d[4 * j + 3] += v.w;
      }
    }
    if (tid == 0) counters[tile] = 0;
  }
  // C through shared memory (the A stages are free now), then 16-byte rows out.
  __syncthreads();
  constexpr int PITCH = BN + 8;  // halves a row of the staged C tile
  __half* staged = reinterpret_cast<__half*>(smem);
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int n = 16 * warp + g + 8 * ((i / 2) % 2), m = 8 * (i / 4) + 2 * t + i % 2;
    staged[m * PITCH + n] = __float2half_rn(d[i] * 16384.0f);
  }
  __syncthreads();
  for (int chunk = tid; chunk < BM * BN / 8; chunk += THREADS) {
    const int m = chunk / (BN / 8), n8 = chunk % (BN / 8);
    *reinterpret_cast<uint4*>(c + static_cast<long long>(tm * BM + m) * N + tn * BN + 8 * n8) =
        *reinterpret_cast<const uint4*>(staged + m * PITCH + 8 * n8);
  }
}

constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024;

void launch(int64_t a, int64_t sa, int64_t a_img, int64_t b, int64_t sb, int64_t c, int64_t ws, int64_t counters,
            int64_t M, int64_t N, int64_t K, int64_t split, int64_t stream_handle) {
  auto stream = reinterpret_cast<cudaStream_t>(stream_handle);
  const long long chunks = M * K / 8;
  predecode_a<<<static_cast<unsigned>((chunks + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<const uint8_t*>(a), reinterpret_cast<const uint8_t*>(sa), reinterpret_cast<uint4*>(a_img),
      static_cast<int>(M), static_cast<int>(K));
  static bool configured = false;
  if (!configured) {
    cudaFuncSetAttribute(gemm_rs, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    configured = true;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>((M / BM) * (N / BN) * split));
  config.blockDim = dim3(THREADS);
  config.dynamicSmemBytes = SMEM_BYTES;
  config.stream = stream;
  cudaLaunchAttribute pdl[1];
  pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = pdl;
  config.numAttrs = 1;
  cudaLaunchKernelEx(&config, gemm_rs, reinterpret_cast<const uint8_t*>(a_img), reinterpret_cast<const uint8_t*>(b),
                     reinterpret_cast<const uint8_t*>(sb), reinterpret_cast<__half*>(c), reinterpret_cast<float*>(ws),
                     reinterpret_cast<int*>(counters), static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                     static_cast<int>(split));
}
"""
for _name, _value in {"WGMMA_ASM": _wgmma_asm(), "TILE_BM": BM, "TILE_BN": BN, "TILE_BK": BK, "TILE_STAGES": STAGES,
                      "TILE_THREADS": THREADS}.items():  # the tile's constants defined once, here
    CUDA_SRC = CUDA_SRC.replace(_name, str(_value))

CPP_SRC = (
    "void launch(int64_t a, int64_t sa, int64_t a_img, int64_t b, int64_t sb, int64_t c, int64_t ws,"
    " int64_t counters, int64_t M, int64_t N, int64_t K, int64_t split, int64_t stream_handle);"
)

_SCRATCH: dict = {}


def build(name: str, cuda_source: str = CUDA_SRC) -> Any:
    """The extension compiled from ``cuda_source`` (nvcc for sm_90a, about 30 s; cached by torch per name)."""
    from torch.utils.cpp_extension import load_inline

    return load_inline(
        name=name,
        cpp_sources=CPP_SRC,
        cuda_sources=cuda_source,
        functions=["launch"],
        extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a", "-std=c++17"],
    )


def pick_split_k(tiles: int, steps: int, sms: int, fixup_steps: int = FIXUP_STEPS) -> int:
    """Split K over CTAs (one an SM) to minimise waves x (steps a CTA + the fix-up), at least 4 steps a CTA."""
    best, best_cost = 1, None
    for split in range(1, 17):
        per = -(-steps // split)
        if split > 1 and (per < 4 or (split - 1) * per >= steps):
            break
        cost = -(-tiles * split // sms) * (per + (fixup_steps if split > 1 else 0))
        if best_cost is None or cost < best_cost:
            best, best_cost = split, cost
    return best


def _scratch(device: torch.device, rows: int, k: int, ws_floats: int, tiles: int) -> tuple:
    """A's image, the split-K workspace and zeroed arrival counters, kept across calls."""
    key = (str(device), rows, k, ws_floats, tiles)
    if key not in _SCRATCH:
        _SCRATCH.clear()
        _SCRATCH[key] = (
            torch.empty(rows * k, dtype=torch.float16, device=device),
            torch.empty(max(ws_floats, 1), dtype=torch.float32, device=device),
            torch.zeros(max(tiles, 1), dtype=torch.int32, device=device),
        )
    return _SCRATCH[key]


def gemm(data: tuple, module: Any, split_k: int | None = None) -> torch.Tensor:
    """Run the two kernels of ``module`` (``build``) on a contest input tuple; ``split_k=None`` picks the split."""
    a, b, sfa, sfb, _, _, c = data
    m, half_k, batches = a.shape
    n, k = b.shape[0], 2 * half_k
    if not a.is_cuda or torch.cuda.get_device_capability(a.device) != (9, 0):
        raise RuntimeError("rs_gemm_cuda runs on sm_90 GPUs (Hopper) only")
    if m % BM or n % BN or k % BK or batches != 1:
        raise ValueError(f"rs_gemm_cuda needs M % {BM}, N % {BN}, K % {BK} == 0 and L == 1: {m}, {n}, {k}, {batches}")
    tiles, steps = (m // BM) * (n // BN), k // BK
    split = split_k or pick_split_k(tiles, steps, torch.cuda.get_device_properties(a.device).multi_processor_count)
    a_img, ws, counters = _scratch(a.device, m, k, tiles * split * BM * BN if split > 1 else 0, tiles)
    module.launch(
        a.data_ptr(), sfa.data_ptr(), a_img.data_ptr(), b.data_ptr(), sfb.data_ptr(), c.data_ptr(),
        ws.data_ptr(), counters.data_ptr(), m, n, k, split, torch.cuda.current_stream(a.device).cuda_stream,
    )
    return c

