"""Does the decode of B overlap the wgmmas on a Hopper SM? The hand-written GEMM (rs_gemm_cuda.py) timed in variants.

usage: python3 scripts/decode_overlap_probe.py OUT.json [--splits 1,2]

Each variant changes one thing in the GEMM's CUDA text and is timed on the contest's long shape
(m=128 n=7168 k=16384) by CUDA events over back-to-back calls (about 80-140 us a call, well above the
host's launch cost): the shipped loop; no decode (the wgmmas and the A pipeline alone); the decode
replaced by as many plain integer operations on the same loaded bytes, or by as many on values every
thread shares (ptxas puts those on the uniform datapath: if they add as much as the plain ones, the
cost is the warp's issue slots; if not, the vector pipes or registers the wgmmas also use); the decode
after the wgmmas' wait instead of before it; the decode with an integer operation in place of each
f16x2 multiply (the ``HMUL2``s: run 42 read it slower, not faster); and the wgmma's A operand from shared
memory instead of registers, with and without the decode. If the decode hid under the wgmmas, the shipped loop would
read near "no decode"; docs/baselines.md ("The decode on four bytes at once; decode and wgmma do not
overlap") has what the H200 read. The variants that keep the product (the shipped loop, the decode
after the wait) are checked against the reference first.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rs_gemm_cuda

SHAPE = {"m": 128, "n": 7168, "k": 16384, "l": 1, "seed": 3}
ISSUE = "for (int ch = 0; ch < 8; ++ch) wgmma(d, &cur[4 * ch], desc + ((ch / 4) * (BM * 128) + (ch % 4) * 32) / 16);"
DECODE = "      decode_step(nb, next);\n"
COMMIT = 'asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");'
WAIT = '\n    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");'
ANCHOR_FUNCTIONS = "// Nibbles i and i + 4"
SCALE_MULTIPLY = 'asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(out) : "r"(bits), "r"(s));'
SCALE_BY_INTEGER = "out = bits ^ s;  // an integer operation in place of the f16x2 multiply (timing only)"
ANCHOR_EPILOGUE = "  // Fragment i of a thread"
SINK = [("  float d[64];", "  uint32_t sink = 0;\n  float d[64];"),
        (ANCHOR_EPILOGUE, "  if (sink == 0x12345u) d[0] += 1.0f;\n" + ANCHOR_EPILOGUE)]  # keeps the stand-in work
PLAIN_WORK = """{  // about as many integer operations as the decode, on the same bytes
        uint32_t x[8] = {nb.row0.x, nb.row0.y, nb.row0.z, nb.row0.w, nb.row1.x, nb.row1.y, nb.row1.z, nb.row1.w};
#pragma unroll
        for (int r = 0; r < 5; ++r)
#pragma unroll
          for (int q = 0; q < 8; ++q) x[q] = ((x[q] << 3) ^ (x[q] >> 5)) + 0x9E3779B9u * (q + r);
        sink ^= x[0] ^ x[1] ^ x[2] ^ x[3] ^ x[4] ^ x[5] ^ x[6] ^ x[7];
      }
"""
UNIFORM_WORK = """{  // as many integer operations as the plain work, on values every thread shares: ptxas runs
        // them on the uniform datapath (its own registers), so they take issue slots but no vector pipe or register
        uint32_t x[8];
#pragma unroll
        for (int q = 0; q < 8; ++q) x[q] = (uint32_t)i * 0x9E3779B9u + q;
#pragma unroll
        for (int r = 0; r < 5; ++r)
#pragma unroll
          for (int q = 0; q < 8; ++q) x[q] = ((x[q] << 3) ^ (x[q] >> 5)) + 0x9E3779B9u * (q + r);
        sink ^= x[0] ^ x[1] ^ x[2] ^ x[3] ^ x[4] ^ x[5] ^ x[6] ^ x[7];
      }
"""
SS_ISSUE = ("for (int ch = 0; ch < 8; ++ch) { const uint64_t s = desc + ((ch / 4) * (BM * 128) + (ch % 4) * 32) / 16;"
            " wgmma_ss(d, s, s); }")
DECODE_KEPT = DECODE + "#pragma unroll\n      for (int q = 0; q < 32; ++q) sink ^= next[q];\n"


def wgmma_ss_function() -> str:
    """The same wgmma with its A operand from shared memory (A's own stage stands in for B: timing only)."""
    accumulators = "{" + ", ".join(f"%{i}" for i in range(64)) + "}"
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(64))
    return (
        "__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t da, uint64_t desc) {\n"
        '  asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %66, 0;\\n"\n'
        f'    "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {accumulators}, %64, %65, p, 1, 1, 0, 0;\\n}}\\n"\n'
        f'    : {outs} : "l"(da), "l"(desc), "r"(1));\n}}\n'
    )


def variants() -> dict[str, list[tuple[str, str]]]:
    """Variant name -> (text, replacement) pairs applied to rs_gemm_cuda.CUDA_SRC."""
    shared_memory_a = [(ISSUE, SS_ISSUE), (ANCHOR_FUNCTIONS, wgmma_ss_function() + ANCHOR_FUNCTIONS)]
    return {
        "shipped loop": [],
        "no decode": [(DECODE, "")],
        "plain integer work for the decode": [(DECODE, PLAIN_WORK), *SINK],
        "plain uniform-datapath work for the decode": [(DECODE, UNIFORM_WORK), *SINK],
        "decode after the wait": [(COMMIT, COMMIT + WAIT)],
        "decode with an integer operation for each f16x2 multiply": [(SCALE_MULTIPLY, SCALE_BY_INTEGER)],
        "A from shared memory, no decode": [*shared_memory_a, (DECODE, "")],
        "A from shared memory, decode": [*shared_memory_a, (DECODE, DECODE_KEPT), *SINK],
    }


def variant_source(replacements: list[tuple[str, str]]) -> str:
    """CUDA_SRC with each replacement made; a text that is not there exactly once is an error, not a no-op."""
    text = rs_gemm_cuda.CUDA_SRC
    for old, new in replacements:
        if text.count(old) != 1:
            raise ValueError(f"the GEMM's CUDA text holds {text.count(old)} copies of {old[:60]!r}")
        text = text.replace(old, new)
    return text


def time_call(call, calls: int = 20, rounds: int = 5) -> float:
    """Median us a call over ``rounds`` blocks of back-to-back calls (CUDA events)."""
    import torch

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    readings = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            call()
        end.record()
        end.synchronize()
        readings.append(start.elapsed_time(end) * 1000 / calls)
    return sorted(readings)[rounds // 2]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--splits", default="1,2", help="K splits to time each variant at (1: 56 CTAs, 2: 112)")
    args = parser.parse_args(argv)
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from problems.nvfp4_gemm import reference

    data = reference.generate_input(**SHAPE, device="cuda")
    expected = reference.ref_kernel(data)
    rows = []
    for index, (name, replacements) in enumerate(variants().items()):
        module = rs_gemm_cuda.build(f"rs_gemm_probe_{index}", variant_source(replacements))
        row = {"variant": name}
        if name in ("shipped loop", "decode after the wait"):
            out = rs_gemm_cuda.gemm(data, module).clone()
            ok, message = reference.check_implementation(data, out, expected=expected)
            row["check"] = "pass" if ok else message[:120]
        for split in (int(part) for part in args.splits.split(",")):
            row[f"split {split} us"] = round(time_call(functools.partial(rs_gemm_cuda.gemm, data, module, split)), 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "shape": SHAPE, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
