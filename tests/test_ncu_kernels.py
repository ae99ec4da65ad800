"""Nsight Compute's per-kernel summary (scripts/ncu_kernels.py): ncu's details page read into one row per
kernel, grouped by shape through the marker kernel that opens each shape."""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))  # the script imports ncu_times beside it
_SPEC = importlib.util.spec_from_file_location("ncu_kernels_script", SCRIPTS / "ncu_kernels.py")
ncu_kernels = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ncu_kernels)
sys.path.remove(str(SCRIPTS))

from harness.sol.globaltimer import KERNEL_NAME  # noqa: E402

FIELDS = ["ID", "Process ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]


def details(*kernels: tuple[int, str, dict[str, tuple[str, str]]]) -> str:
    """ncu --csv --page details text: a line of ncu's own first, then one row per (kernel, metric)."""
    out = io.StringIO()
    out.write("==PROF== Connected to process 7\n")
    writer = csv.DictWriter(out, FIELDS, quoting=csv.QUOTE_ALL)
    writer.writeheader()
    for kernel_id, name, metrics in kernels:
        for metric, (unit, value) in metrics.items():
            writer.writerow({"ID": kernel_id, "Process ID": 7, "Kernel Name": name, "Section Name": "s",
                             "Metric Name": metric, "Metric Unit": unit, "Metric Value": value})
    return out.getvalue()


def test_each_shape_gets_its_kernels_with_their_figures() -> None:
    marker = {"Duration": ("usecond", "1.02"), "Grid Size": ("", "1")}
    text = details(
        (0, f"{KERNEL_NAME}(unsigned long long*)", marker),
        (1, "_predecode_kernel", {"Duration": ("usecond", "3.87"), "Grid Size": ("", "512"),
                                  "L2 Cache Throughput": ("%", "37.31"), "Elapsed Cycles": ("cycle", "6,000")}),
        (2, "_gemm_kernel(int, int)", {"Duration": ("msecond", "0.06614"), "Waves Per SM": ("", "0.85"),
                                       "Registers Per Thread": ("register/thread", "153"), "Grid Size": ("", "1,224")}),
        (3, KERNEL_NAME, marker),
        (4, "_gemm_kernel", {"Duration": ("nsecond", "13,380"), "DRAM Throughput": ("%", "n/a")}),
    )
    first, second, third = ncu_kernels.kernels_by_case(text, 3)
    assert [k["kernel"] for k in first] == ["_predecode_kernel", "_gemm_kernel"]
    assert first[0] == {"kernel": "_predecode_kernel", "us": 3.87, "grid": 512.0, "l2_pct": 37.31}
    assert first[1]["us"] == 66.14 and first[1]["registers"] == 153.0 and first[1]["grid"] == 1224.0
    assert first[1]["waves"] == 0.85
    assert second == [{"kernel": "_gemm_kernel", "us": 13.38, "dram_pct": None}]
    assert third == [], "a shape whose run died has no kernels"


def test_the_table_has_a_row_per_kernel() -> None:
    rows = [{"file": "submissions/nvfp4_gemm/triton_gemm.py", "shape": "m=128", "kernel": "_gemm_kernel",
             "us": 66.14, "grid": 224.0, "block": 128.0, "registers": 153.0, "l2_pct": 68.29}]
    lines = ncu_kernels.table(rows).splitlines()
    assert len(lines) == 3
    assert lines[2] == "| triton_gemm.py | m=128 | _gemm_kernel | 224 x 128 | 153 | 66.14 | - | 68.29 | - | - | - |"
