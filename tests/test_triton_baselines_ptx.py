"""The NVFP4 GEMM baselines compiled for sm_90 on the CPU: the decoded B never goes back through
shared memory, and no instruction writes the registers of a wgmma still in flight.

Why: wgmma takes its register operand in a fixed layout. Decoded in any other layout, the fp16
tile is stored to shared memory and loaded back (``st.shared`` then ``ldmatrix``) on every K step,
which cost the GEMM a third of its time on the H100 (docs/baselines.md, issue 37). The kernels
decode B in "the tile's K order", in which each thread's bytes decode straight into wgmma's
layout; this compiles each main kernel with Triton's own compiler (no GPU needed: Triton lowers
to PTX for any target) and checks the PTX's main loop (the loop that issues wgmma): no
shared-memory store and no ``ldmatrix`` in it. Beside it: the grouped GEMM's compile-time table width
is one value on every contest shape (one compile of its main kernel in a ranked run).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("ptx_summary", ROOT / "scripts" / "ptx_summary.py")
ptx_summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ptx_summary)

COMMON = {"M": "i32", "N": "i32", "K": "i32", "L": "i32"}
FLAGS = {"N_MASK": False, "K_MASK": False, "SCALE_WORDS": True, "USE_ASM": True, "COMPILED": True}

GROUP_SIGNATURE = {
    "table_ptr": "*i64",
    "a_desc": "tensordesc<fp16[128,128]>",
    "a_desc_half": "tensordesc<fp16[64,128]>",
    "a_desc_quarter": "tensordesc<fp16[32,128]>",
    "G": "i32",
}
GROUP_CONSTEXPRS = {
    "GP": 8,
    "BM": 128,
    "BN": 64,
    "BK": 128,
    "K_MASK": False,
    "SCALE_WORDS": False,
    "USE_ASM": True,
    "COMPILED": True,
    "WARPS": 4,
    "PDL": True,
}

# case (its problem first) -> (file, kernel, signature, constexprs, num_warps, num_stages, divisible
# argument indices): configurations of each file on a contest shape (no masks, one split).
GEMM_SIGNATURE = {
    "ad_desc": "tensordesc<fp16[128,128]>",
    "b_desc": "tensordesc<u8[1,64,64]>",
    "sb_ptr": "*u8",
    "c_ptr": "*fp16",
    "ws_ptr": "*fp32",
    "cnt_ptr": "*i32",
    **COMMON,
    "SPLIT_K": "i32",
}
KERNELS: dict[str, tuple[str, str, dict[str, str], dict[str, Any], int, int, tuple[int, ...]]] = {
    "nvfp4_gemm": (  # the default: BN 64 on 4 warps, 3 stages
        "submissions/nvfp4_gemm/triton_gemm.py",
        "_gemm_kernel",
        GEMM_SIGNATURE,
        {"BM": 128, "BN": 64, "BK": 128, **FLAGS, "WARPS": 4, "PDL": True},
        4,
        3,
        (2, 3, 4, 5, 6, 7, 8),
    ),
    "nvfp4_gemm wide": (  # BN 128 on 8 warps, a configuration of the tune
        "submissions/nvfp4_gemm/triton_gemm.py",
        "_gemm_kernel",
        {**GEMM_SIGNATURE, "b_desc": "tensordesc<u8[1,128,64]>"},
        {"BM": 128, "BN": 128, "BK": 128, **FLAGS, "WARPS": 8, "PDL": True},
        8,
        3,
        (2, 3, 4, 5, 6, 7, 8),
    ),
    "nvfp4_dual_gemm": (
        "submissions/nvfp4_dual_gemm/triton_dual_gemm.py",
        "_dual_gemm_kernel",
        {
            "ad_desc": "tensordesc<fp16[128,128]>",
            "b1_desc": "tensordesc<u8[1,64,64]>",
            "sb1_ptr": "*u8",
            "b2_desc": "tensordesc<u8[1,64,64]>",
            "sb2_ptr": "*u8",
            "c_ptr": "*fp16",
            "ws_ptr": "*fp32",
            "cnt_ptr": "*i32",
            **COMMON,
            "SPLIT_K": "i32",
        },
        {"BM": 128, "BN": 64, "BK": 128, "SPLIT": False, **FLAGS, "WARPS": 4, "PDL": True},
        4,
        2,
        (4, 5, 6, 7, 8, 9, 10),
    ),
    "nvfp4_group_gemm": (
        "submissions/nvfp4_group_gemm/triton_group_gemm.py",
        "_group_gemm_kernel",
        GROUP_SIGNATURE,
        GROUP_CONSTEXPRS,
        4,
        3,
        (0,),
    ),
    # The grouped GEMM's default before run 39 and a configuration of the tune: BN 128 on 8 warps.
    "nvfp4_group_gemm wide": (
        "submissions/nvfp4_group_gemm/triton_group_gemm.py",
        "_group_gemm_kernel",
        GROUP_SIGNATURE,
        {**GROUP_CONSTEXPRS, "BN": 128, "WARPS": 8},
        8,
        3,
        (0,),
    ),
}


def load_submission(problem: str, path: str) -> ModuleType:
    """A baseline file imported as the contest runner would (its folder's task.py importable)."""
    sys.path.insert(0, str(ROOT / "problems" / problem))  # the file's `from task import ...`
    try:
        spec = importlib.util.spec_from_file_location(f"ptx_{problem}", ROOT / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "problems" / problem))
        sys.modules.pop("task", None)
    return module


def compile_ptx(case: str) -> str:
    """The PTX of the case's main kernel for sm_90a, from Triton's compiler on this CPU."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    path, name, signature, constexprs, warps, stages, divisible = KERNELS[case]
    module = load_submission(case.split()[0], path)
    full_signature = {**signature, **{key: "constexpr" for key in constexprs}}
    attrs = {(index,): [["tt.divisibility", 16]] for index in divisible}
    source = ASTSource(getattr(module, name), full_signature, constexprs, attrs)
    options = {"num_warps": warps, "num_stages": stages}
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options).asm["ptx"]


def test_the_grouped_gemm_searches_one_table_width_on_every_contest_shape() -> None:
    """Its table search width is a compile-time constant: one width for 2 to 8 groups means one compile
    of the main kernel in a ranked run, not one per power of two (about 1 s each on the H100)."""
    module = load_submission("nvfp4_group_gemm", KERNELS["nvfp4_group_gemm"][0])
    spec = yaml.safe_load((ROOT / "problems" / "nvfp4_group_gemm" / "task.yml").read_text())
    widths = {module.group_slots(len(case["m"])) for case in spec["tests"] + spec["benchmarks"]}
    assert widths == {8}
    assert module.group_slots(9) == 16, "more groups than 8 still fit the search"


@pytest.mark.parametrize("case", sorted(KERNELS))
def test_decoded_b_reaches_wgmma_without_shared_memory(case: str) -> None:
    ptx = compile_ptx(case)
    assert "wgmma.mma_async" in ptx, "the kernel no longer uses Hopper's wgmma"
    assert ptx_summary.main_loop_traffic(ptx) == (0, 0), "the decoded B goes through shared memory in the main loop"


@pytest.mark.parametrize("case", sorted(KERNELS))
def test_no_instruction_writes_the_registers_of_a_wgmma_in_flight(case: str, tmp_path: Path) -> None:
    """Triton 3.6 leaves all but one of a step's wgmma groups in flight at the loop's back edge; a write to one's A
    registers (the decoded B) before it retires is a race the GEMM lost on the H100 (docs/results.md run 40)."""
    ptx = tmp_path / "kernel.ptx"
    ptx.write_text(compile_ptx(case))
    report = ptx_summary.ptxas_report(ptx, "sm_90a")
    assert "ptxas_error" not in report, report
    assert report["pending_operand_writes"] == 0, "the next K step writes registers a wgmma in flight still reads"


WGMMA_LOOP = """
        /*0100*/                   LDS.128 R4, [R2] ;
        /*0110*/                   LOP3.LUT R{write}, R4, 0xf, RZ, 0xc0, !PT ;
        /*0120*/                   WARPGROUP.ARRIVE ;
        /*0130*/                   HGMMA.64x128x16.F32 R24, R88, gdesc[UR16], R24, gsb0 ;
        /*0140*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0150*/                   WARPGROUP.ARRIVE ;
        /*0160*/                   HGMMA.64x128x16.F32 R24, R92, gdesc[UR16], R24, gsb0 ;
        /*0170*/                   WARPGROUP.DEPBAR.LE gsb0, 0x{left} ;
        /*0180*/               @P0 BRA 0x100 ;
"""


def test_the_hazard_check_sees_a_write_to_an_operand_in_flight() -> None:
    """The check itself can fail: with one group left in flight at the back edge (R92's), writing R93 at the
    loop's top is reported; writing R89 (its group retired) is not, nor is anything once the wait leaves none."""
    assert len(ptx_summary.pending_operand_writes(WGMMA_LOOP.format(write=93, left=1))) == 1
    assert ptx_summary.pending_operand_writes(WGMMA_LOOP.format(write=89, left=1)) == []
    assert ptx_summary.pending_operand_writes(WGMMA_LOOP.format(write=93, left=0)) == []


def shifted(sass: str, offset: int) -> str:
    """SASS lines with their addresses (``/*0100*/``) and branch targets (``BRA 0x100``) moved by ``offset``."""
    sass = re.sub(r"/\*([0-9a-f]{4})\*/", lambda m: f"/*{int(m.group(1), 16) + offset:04x}*/", sass)
    return re.sub(r"BRA 0x([0-9a-f]+)", lambda m: f"BRA {int(m.group(1), 16) + offset:#x}", sass)


def test_the_hazard_check_reads_every_wgmma_loop_of_a_kernel() -> None:
    """The grouped GEMM has one K loop per tile height: a write in the second of two loops counts, and a stub
    after the kernel's EXIT that branches back into a loop is no loop of its own."""
    clean, racy = WGMMA_LOOP.format(write=89, left=1), WGMMA_LOOP.format(write=93, left=1)
    stub = "        /*0f00*/                   EXIT ;\n        /*0f10*/                   BRA 0x110 ;\n"
    assert len(ptx_summary.hgmma_loops(ptx_summary.sass_instructions(clean + shifted(racy, 0x400) + stub))) == 2
    assert len(ptx_summary.pending_operand_writes(clean + shifted(racy, 0x400) + stub)) == 1
    assert ptx_summary.pending_operand_writes(clean + shifted(clean, 0x400) + stub) == []


def test_the_check_sees_a_round_trip() -> None:
    """The check itself can fail: a store and an ldmatrix in a wgmma loop are counted, outside it not."""
    ptx = "\n".join(
        [
            "st.shared.b32 [r0], r0;",
            "$L__BB0_2:",
            "st.shared.v4.b32 [r1], {r2, r3, r4, r5};",
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r6, r7, r8, r9}, [r1];",
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {f0}, {r6}, d0, p, 1, 1, 1;",
            "@%p1 bra $L__BB0_2;",
            "st.shared.b32 [r3], r4;",
        ]
    )
    assert ptx_summary.main_loop_traffic(ptx) == (1, 1)


TINY_PTX = """.version 8.0
.target sm_90a
.address_size 64

.visible .entry tiny(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    st.global.u32 [%rd2], %r1;
    ret;
}
"""


def test_the_summary_reads_a_triton_cache_with_ptxas(tmp_path):
    """scripts/ptx_summary.py on a cache folder: a kernel's options from its JSON, counts from its PTX,
    registers from the ptxas that ships with Triton."""
    kernel = tmp_path / "HASH" / "tiny.ptx"
    kernel.parent.mkdir()
    kernel.write_text(TINY_PTX)
    kernel.with_suffix(".json").write_text('{"num_warps": 4, "num_stages": 3, "shared": 0}')
    (row,) = ptx_summary.summarise(tmp_path)
    assert row["kernel"] == "tiny" and (row["num_warps"], row["num_stages"], row["shared_bytes"]) == (4, 3, 0)
    assert (row["st.shared"], row["wgmma"], row["loop_st.shared"], row["loop_ldmatrix"]) == (0, 0, 0, 0)
    assert isinstance(row["registers"], int) and row["registers"] > 0 and row["spill_bytes"] == 0
    assert row["serialised_wgmma"] == []
