"""Every Triton kernel in a cache folder as ptxas sees it: shared-memory traffic, registers, spills,
and whether ptxas serialised its wgmma instructions.

Why: a decoded operand that Triton sends back through shared memory (``st.shared`` in the main
loop) and wgmma groups that ptxas serialises (warnings C7513 / C7515: a non-wgmma instruction
writes a wgmma's registers while its group is in flight) each cost an NVFP4 GEMM a large part of
its tensor-core rate, and neither shows in a timing. This reads what the kernels compiled to,
so a tune's table can say why a configuration is slow (issue 37).

    python3 scripts/ptx_summary.py TRITON_CACHE_DIR [OUT.json]
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
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
    """Registers, spill bytes and the wgmma serialisation warnings of one PTX file (the first ptxas that reads it)."""
    text = "no ptxas found"
    for ptxas in ptxas_candidates():
        run = subprocess.run(
            [ptxas, f"-arch={arch}", "-v", str(ptx), "-o", "/dev/null"], capture_output=True, text=True
        )
        text = run.stdout + run.stderr
        if run.returncode == 0:
            registers = re.search(r"Used (\d+) registers", text)
            spills = re.search(r"(\d+) bytes spill stores", text)
            return {
                "registers": int(registers.group(1)) if registers else None,
                "spill_bytes": int(spills.group(1)) if spills else None,
                "serialised_wgmma": sorted(set(re.findall(r"\((C75\d\d)\)", text))),
            }
    return {"ptxas_error": text.strip().splitlines()[-1] if text.strip() else "ptxas printed nothing"}


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
