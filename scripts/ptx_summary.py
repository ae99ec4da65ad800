"""Every Triton kernel in a cache folder as ptxas sees it: shared-memory traffic, registers, spills,
whether ptxas serialised its wgmma instructions, and writes to the registers of wgmmas in flight.

Why: a decoded operand that Triton sends back through shared memory (``st.shared`` in the main
loop) and wgmma groups that ptxas serialises (warnings C7513 / C7515: a non-wgmma instruction
writes a wgmma's registers while its group is in flight) each cost an NVFP4 GEMM a large part of
its tensor-core rate, and neither shows in a timing. Worse, Triton 3.6 lets the next K step's
decode write the A-operand registers of wgmmas still in flight from the last one (its waits leave
all but one group pending at the loop's back edge, and ptxas does not always keep their registers);
a wgmma that reads them late multiplies garbage: the GEMM read inf that way (docs/results.md runs
39 and 40). This reads what the kernels compiled to, so a tune's table can say why a configuration
is slow or wrong, and the tests can refuse a kernel whose loop has such a write (issue 37).

    python3 scripts/ptx_summary.py TRITON_CACHE_DIR [OUT.json]
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import triton

COUNTED = {
    "st.shared": r"\bst\.shared",
    "ld.shared": r"\bld\.shared",
    "ldmatrix": r"\bldmatrix",
    "wgmma": r"wgmma\.mma_async",
}


def ptxas_candidates() -> list[str]:
    """Triton's own ptxas first (it reads the PTX version that Triton writes), then the toolkit's."""
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    found = [str(bundled / name) for name in ("ptxas-blackwell", "ptxas") if (bundled / name).exists()]
    return found + [
        path for path in (shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas") if path and Path(path).exists()
    ]


def ptxas_report(ptx: Path, arch: str) -> dict:
    """Registers, spill bytes, the wgmma serialisation warnings and the writes to in-flight wgmma operands
    (``pending_operand_writes``) of one PTX file (the first ptxas that reads it)."""
    text = "no ptxas found"
    with tempfile.TemporaryDirectory() as folder:
        cubin = Path(folder) / "kernel.cubin"
        for ptxas in ptxas_candidates():
            run = subprocess.run(
                [ptxas, f"-arch={arch}", "-v", str(ptx), "-o", str(cubin)], capture_output=True, text=True
            )
            text = run.stdout + run.stderr
            if run.returncode == 0:
                registers = re.search(r"Used (\d+) registers", text)
                spills = re.search(r"(\d+) bytes spill stores", text)
                sass = subprocess.run(
                    [str(Path(ptxas).with_name("cuobjdump")), "-sass", str(cubin)], capture_output=True, text=True
                ).stdout
                return {
                    "registers": int(registers.group(1)) if registers else None,
                    "spill_bytes": int(spills.group(1)) if spills else None,
                    "serialised_wgmma": sorted(set(re.findall(r"\((C75\d\d)\)", text))),
                    "pending_operand_writes": len(pending_operand_writes(sass)),
                }
    return {"ptxas_error": text.strip().splitlines()[-1] if text.strip() else "ptxas printed nothing"}


def sass_instructions(sass: str) -> list[tuple[int, str]]:
    """(address, instruction) of every line of ``cuobjdump -sass`` output."""
    found = (re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line) for line in sass.splitlines())
    return [(int(match.group(1), 16), match.group(2)) for match in found if match]


def hgmma_loops(instructions: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Every innermost loop (a backward branch and its target) that issues HGMMA: a kernel may hold several
    (the grouped GEMM has one K loop per tile height), and each is a pipeline of its own."""
    loops = []
    for address, text in instructions:
        branch = re.search(r"\bBRA\s+0x([0-9a-f]+)$", text)
        if branch and int(branch.group(1), 16) < address:
            body = [item for item in instructions if int(branch.group(1), 16) <= item[0] <= address]
            # A retry stub placed after the kernel's EXIT that branches back into a loop spans no loop.
            if any("HGMMA" in line for _, line in body) and not any(line.startswith("EXIT") for _, line in body):
                loops.append(body)
    return [body for body in loops if not any(other != body and set(other) < set(body) for other in loops)]


# Opcodes that write no general register (or only uniform, predicate or barrier state).
_NO_REGISTER_WRITE = (
    "HGMMA",
    "ST",
    "RED",
    "ATOM",
    "BRA",
    "BAR",
    "SYNCS",
    "WARPGROUP",
    "DEPBAR",
    "LDGDEPBAR",
    "LDGSTS",
    "UTMA",
    "NOP",
    "ISETP",
    "FSETP",
    "PLOP3",
    "ELECT",
    "VOTEU",
    "R2UR",
    "U",
)


def written_registers(text: str) -> set[int]:
    """The general registers one SASS instruction writes (its first operand; 64- and 128-bit forms widen it)."""
    text = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
    opcode = text.split()[0]
    destination = re.match(r"\S+\s+R(\d+)\b", text)
    if opcode.startswith(_NO_REGISTER_WRITE) or not destination:
        return set()
    width = 4 if ".128" in opcode else 2 if ".64" in opcode or opcode.startswith("IMAD.WIDE") else 1
    return set(range(int(destination.group(1)), int(destination.group(1)) + width))


def pending_operand_writes(sass: str) -> list[str]:
    """Instructions of the HGMMA loops that write an A-operand register of a wgmma still in flight.

    Simulates the warpgroup's scoreboard over two passes of each loop (the first leaves the state the
    back edge carries): an HGMMA adds its four A registers to the in-flight list, ``WARPGROUP.DEPBAR.LE
    gsb0, N`` keeps the N newest, and any other instruction writing a listed register is reported.
    """
    writes = []
    for loop in hgmma_loops(sass_instructions(sass)):
        in_flight: list[set[int]] = []
        for lap in range(2):
            for address, text in loop:
                if operand := re.search(r"HGMMA\S*\s+R\d+,\s+R(\d+)", text):
                    in_flight.append(set(range(int(operand.group(1)), int(operand.group(1)) + 4)))
                elif wait := re.search(r"WARPGROUP\.DEPBAR\.LE\s+gsb0,\s+0x([0-9a-f]+)", text):
                    keep = int(wait.group(1), 16)
                    in_flight = in_flight[-keep:] if keep else []
                elif lap and any(written_registers(text) & quad for quad in in_flight):
                    writes.append(f"{address:#06x} {text}")
    return writes


def main_loop_traffic(ptx: str) -> tuple[int, int]:
    """(``st.shared``, ``ldmatrix``) counts inside the loops that issue wgmma.

    A loop is a label and a later branch back to it; the prologue (TMA descriptors built in
    shared memory) and the epilogue (C staged for its store) lie outside.
    """
    lines = ptx.splitlines()
    labels = {match.group(1): i for i, line in enumerate(lines) if (match := re.match(r"^\s*(\$L__\w+):", line))}
    stores = loads = 0
    for i, line in enumerate(lines):
        branch = re.search(r"\bbra(?:\.uni)?\s+(\$L__\w+);", line)
        if branch and labels.get(branch.group(1), i) < i:
            body = lines[labels[branch.group(1)] : i]
            if any("wgmma.mma_async" in text for text in body):
                stores += sum("st.shared" in text for text in body)
                loads += sum("ldmatrix" in text for text in body)
    return stores, loads


def summarise(cache: Path) -> list[dict]:
    """One row per compiled kernel (a kernel name and its compile options) in ``cache``."""
    rows = []
    for ptx in sorted(cache.glob("*/*.ptx")):
        meta_path = ptx.with_suffix(".json")
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        text = ptx.read_text()
        target = re.search(r"^\.target\s+(\S+)", text, re.M)
        row = {
            "kernel": ptx.stem,
            "num_warps": meta.get("num_warps"),
            "num_stages": meta.get("num_stages"),
            "shared_bytes": meta.get("shared"),
            **{name: len(re.findall(pattern, text)) for name, pattern in COUNTED.items()},
        }
        row["loop_st.shared"], row["loop_ldmatrix"] = main_loop_traffic(text)
        row.update(ptxas_report(ptx, target.group(1) if target else "sm_90a"))
        rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    if not argv or not Path(argv[0]).is_dir():
        print("usage: ptx_summary.py TRITON_CACHE_DIR [OUT.json] (the folder Triton compiled into)", file=sys.stderr)
        return 2
    rows = summarise(Path(argv[0]))
    for row in rows:
        print(" ".join(f"{key}={value}" for key, value in row.items() if value not in (None, [])))
    if len(argv) > 1:
        Path(argv[1]).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
