"""The Triton GEMMs' e2m1 decode snippet (``_decode_asm``), run by the PTX interpreter against an e2m1 table.

The snippet only runs on a GPU, and the CPU checks of the baselines run its plain-Triton twin
(``_decode_ref``) instead; so without this test a wrong mask or byte selector in the PTX text would
surface only on the device. Here the text each file ships is executed instruction by instruction
for every byte value in every position of a word, with block scales from e4m3's normal and
subnormal range, and each fp16 out is compared with e2m1(code) * 2^-14 * scale from a value table.
"""

from __future__ import annotations

import ast
import math
import struct
from pathlib import Path

import pytest

from tests.ptx_interpreter import run_snippet

ROOT = Path(__file__).resolve().parents[1]
FILES = [
    "submissions/nvfp4_gemm/triton_gemm.py",
    "submissions/nvfp4_dual_gemm/triton_dual_gemm.py",
    "submissions/nvfp4_group_gemm/triton_group_gemm.py",
]
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
SCALES = (1.0, 0.5, 448.0, 3 * 2.0**-9, 2.0**-9, 1.875)  # e4m3 values: normal, largest, subnormal


def decode_asm_text(path: Path) -> str:
    """The ``asm=`` string of ``_decode_asm`` in a submission file (read from its source, not imported)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name == "_decode_asm":
            for call in ast.walk(node):
                for keyword in getattr(call, "keywords", []):
                    if keyword.arg == "asm" and isinstance(keyword.value, ast.Constant):
                        return keyword.value.value
    raise AssertionError(f"{path} has no _decode_asm(asm=...)")


def half_bits(value: float) -> int:
    return struct.unpack("<H", struct.pack("<e", value))[0]


def halves(word: int) -> tuple[float, float]:
    return tuple(struct.unpack("<e", struct.pack("<H", (word >> shift) & 0xFFFF))[0] for shift in (0, 16))


def words() -> list[tuple[int, ...]]:
    """256 words of 4 bytes that put every byte value in every position."""
    return [(i, (7 * i + 3) % 256, (13 * i + 5) % 256, (29 * i + 11) % 256) for i in range(256)]


def mismatches(asm: str) -> list[tuple[str, int, float]]:
    """(nibble plane, byte, scale) of every fp16 the snippet gets wrong, sign of zero included."""
    wrong = []
    for index, data in enumerate(words()):
        scale = [SCALES[(index + e) % len(SCALES)] for e in range(4)]
        out = run_snippet(asm, {
            "$4": int.from_bytes(bytes(data), "little"),
            "$5": half_bits(scale[1]) << 16 | half_bits(scale[0]),
            "$6": half_bits(scale[3]) << 16 | half_bits(scale[2]),
        })
        got = {"low": halves(out["$0"]) + halves(out["$1"]), "high": halves(out["$2"]) + halves(out["$3"])}
        for e, byte in enumerate(data):
            for plane, code in (("low", byte & 0xF), ("high", byte >> 4)):
                want = E2M1[code] * 2.0**-14 * scale[e]
                if got[plane][e] != want or math.copysign(1, got[plane][e]) != math.copysign(1, want):
                    wrong.append((plane, byte, scale[e]))
    return wrong


@pytest.mark.parametrize("relative", FILES)
def test_the_decode_snippet_gives_e2m1_times_scale_for_every_byte_in_every_position(relative: str) -> None:
    assert mismatches(decode_asm_text(ROOT / relative)) == []


def test_a_wrong_byte_selector_or_mask_is_caught() -> None:
    asm = decode_asm_text(ROOT / FILES[0])
    assert "0x3424" in asm and "0x0E0E0E0E" in asm
    assert mismatches(asm.replace("0x3424", "0x3420", 1))  # the second register takes byte 0's low byte
    assert mismatches(asm.replace("0x0E0E0E0E", "0x0E0E0E0C", 1))  # one magnitude bit dropped


@pytest.mark.parametrize("helper", ["_decode_asm", "_decode_ref", "_decode_tile", "_after_wgmma"])
def test_the_contest_files_keep_their_copies_of_a_helper_identical(helper: str) -> None:
    """Each contest file is self-contained, so these helpers are copied, not imported; a fix to one copy
    must reach the others (the snippet test above reads only the GEMM's text for its mutations)."""
    copies = {}
    for relative in FILES:
        text = (ROOT / relative).read_text()
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name == helper:
                copies[relative] = ast.get_source_segment(text, node)
    assert len(copies) >= 2, f"{helper} is in fewer than two of the files"
    assert len(set(copies.values())) == 1, f"the copies of {helper} differ: {sorted(copies)}"
