"""The decode-overlap probe's variants (scripts/decode_overlap_probe.py) and its GEMM's host logic, on the CPU.

The probe's verdicts come from the device; what the CPU can hold is that every variant really changes
the CUDA text it names (a replacement that silently misses would time the shipped loop under another
name) and that the split-K choice and the inline wgmma are what the docs say.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import decode_overlap_probe as probe
import rs_gemm_cuda


def test_every_variant_but_the_shipped_loop_changes_the_cuda_text() -> None:
    sources = {name: probe.variant_source(replacements) for name, replacements in probe.variants().items()}
    assert sources.pop("shipped loop") == rs_gemm_cuda.CUDA_SRC
    assert len(set(sources.values())) == len(sources)
    assert all(text != rs_gemm_cuda.CUDA_SRC for text in sources.values())
    assert "decode_step(nb, next)" not in sources["no decode"]
    assert "wgmma_ss(d, s, s)" in sources["A from shared memory, decode"]
    assert "mul.rn.f16x2" not in sources["decode with an integer operation for each f16x2 multiply"]
    uniform = sources["plain uniform-datapath work for the decode"]
    assert "decode_step(nb, next)" not in uniform and "(uint32_t)i * 0x9E3779B9u" in uniform


def test_a_replacement_whose_text_is_missing_is_an_error() -> None:
    with pytest.raises(ValueError, match="0 copies"):
        probe.variant_source([("no such text in the kernel", "")])


def test_the_inline_wgmma_names_64_accumulators_and_its_four_a_registers() -> None:
    asm = rs_gemm_cuda._wgmma_asm()
    assert asm.count('"+f"(d[') == 64
    assert "m64n128k16.f32.f16.f16 {%0," in asm and "{%64, %65, %66, %67}, %68" in asm


@pytest.mark.parametrize(("n", "k", "split"), [(7168, 16384, 2), (4096, 7168, 4), (7168, 2048, 2)])
def test_the_split_fills_one_wave_of_132_sms_on_the_contest_shapes(n: int, k: int, split: int) -> None:
    assert rs_gemm_cuda.pick_split_k(n // rs_gemm_cuda.BN, k // rs_gemm_cuda.BK, 132) == split
