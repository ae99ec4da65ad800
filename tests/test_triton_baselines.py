"""The Triton baseline submissions, run on the CPU by Triton's interpreter.

Each problem runs in its own subprocess with ``TRITON_INTERPRET=1`` set before triton is imported
(another test in this pytest process may already have imported triton without it). The
subprocess loads the submission file the way the contest does (``task`` importable), runs
``custom_kernel`` on the problem's ``cpu_tests`` from task.yml, a few non-default code paths
(split-K, five ways past the four parts a round the GEMMs' fix-up sums, prefetch, byte-wise scales,
other tiles; on the ragged shapes too), and once more on misread inputs: for NVFP4
the nibbles of A swapped in every byte (what a kernel decoding the nibbles in the wrong order
computes), for the blockwise fp8 GEMM A's M-major scales read as row-major. That output must
fail ``problems.<p>.reference.check_implementation`` against the original data, which shows the
check can fail. Results come back as one JSON line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Checked without importing triton here: the workers import it themselves, interpreter on.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")

ROOT = Path(__file__).resolve().parent.parent

SUBMISSIONS = {
    "nvfp4_gemv": "submissions/nvfp4_gemv/triton_gemv.py",
    "nvfp4_gemm": "submissions/nvfp4_gemm/triton_gemm.py",
    "nvfp4_dual_gemm": "submissions/nvfp4_dual_gemm/triton_dual_gemm.py",
    "nvfp4_group_gemm": "submissions/nvfp4_group_gemm/triton_group_gemm.py",
    "fp8_blockwise_gemm": "submissions/fp8_blockwise_gemm/triton_blockwise_gemm.py",
}

# Entry point and non-default keyword arguments run on the first cpu_tests case.
VARIANTS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "nvfp4_gemv": (
        "gemv",
        [
            {"prefetch": True, "block_m": 16, "blocks_per_step": 4},
            {"split_k": 4, "prefetch": True, "blocks_per_step": 2},
            {"split_k": 0, "blocks_per_step": 2},  # the split picked by per_sm
        ],
    ),
    "nvfp4_gemm": (
        "gemm",
        [{"split_k": 5, "block_k": 64}, {"block_n": 64, "num_warps": 8}, {"block_n": 64, "split_k": 2}],
    ),
    "nvfp4_dual_gemm": ("dual_gemm", [{"split_k": 5, "block_k": 64, "scale_words": False}]),
    "nvfp4_group_gemm": ("group_gemm", [{"scale_words": False, "block_m": 64, "block_n": 64}]),
    "fp8_blockwise_gemm": ("blockwise_gemm", [{"block_m": 128, "block_n": 64, "split_k": 5, "num_warps": 8}]),
}

# Shapes outside the contest's contract that reach the GEMMs' TMA boxes past M (into the next
# batch's rows) and past N: rows of C past M must stay unstored, columns past N zero.
RAGGED: dict[str, list[dict[str, Any]]] = {
    "nvfp4_gemm": [{"m": 96, "n": 192, "k": 256, "l": 2, "seed": 9}],
    "nvfp4_dual_gemm": [{"m": 96, "n": 192, "k": 256, "l": 2, "seed": 9}],
}

WORKER = r"""
import importlib, importlib.util, json, sys
import torch, yaml

root, problem, path, entry = sys.argv[1:5]
variants, ragged = json.loads(sys.argv[5]), json.loads(sys.argv[6])
sys.path.insert(0, root)
sys.modules["task"] = importlib.import_module(f"problems.{problem}.task")
reference = importlib.import_module(f"problems.{problem}.reference")
spec = importlib.util.spec_from_file_location("triton_submission", f"{root}/{path}")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
cases = yaml.safe_load(open(f"{root}/problems/{problem}/task.yml"))["cpu_tests"]


def swapped(packed):
    # (rows, K/2, L) fp4x2 view of (L, rows, K/2) storage -> the same with each byte's nibbles swapped.
    raw = packed.view(torch.uint8).permute(2, 0, 1)
    return (((raw & 0x0F) << 4) | (raw >> 4)).permute(1, 2, 0).view(packed.dtype)


def misread(data):
    if problem == "fp8_blockwise_gemm":  # A's M-major scale storage read as if it were row-major
        a, b, sa, sb, c = data
        return (a, b, sa.t().contiguous().view(sa.shape), sb, c)
    if problem == "nvfp4_group_gemm":
        abc, scales, permuted, sizes = data
        return ([(swapped(a), b, c) for a, b, c in abc], scales, permuted, sizes)
    return (swapped(data[0]),) + tuple(data[1:])


result = {"cases": [], "variants": [], "misread": []}
for case in cases + ragged:
    data = reference.generate_input(**case, device="cpu")
    result["cases"].append([case, *reference.check_implementation(data, module.custom_kernel(data))])
for kwargs in variants:
    for case in [cases[0]] + ragged:
        data = reference.generate_input(**case, device="cpu")
        out = getattr(module, entry)(data, **kwargs)
        result["variants"].append([kwargs, *reference.check_implementation(data, out)])
case = cases[0]
data = reference.generate_input(**case, device="cpu")
out = module.custom_kernel(misread(reference.generate_input(**case, device="cpu")))
result["misread"].append([case, *reference.check_implementation(data, out)])
print("RESULT " + json.dumps(result))
"""


def run_interpreted(problem: str) -> dict[str, Any]:
    """Run the worker for one problem under the Triton CPU interpreter; its parsed JSON result."""
    entry, variants = VARIANTS[problem]
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            WORKER,
            str(ROOT),
            problem,
            SUBMISSIONS[problem],
            entry,
            json.dumps(variants),
            json.dumps(RAGGED.get(problem, [])),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"worker failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


_RESULTS: dict[str, dict[str, Any]] = {}


@pytest.fixture(params=sorted(SUBMISSIONS), scope="module")
def interpreted(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """(problem, worker result), one subprocess per problem for the whole module."""
    problem = request.param
    if problem not in _RESULTS:
        _RESULTS[problem] = run_interpreted(problem)
    return problem, _RESULTS[problem]


def test_cpu_cases_pass(interpreted: tuple[str, dict[str, Any]]) -> None:
    problem, result = interpreted
    assert result["cases"], f"{problem}: task.yml has no cpu_tests"
    for case, ok, message in result["cases"]:
        assert ok, f"{problem} {case}: {message}"


def test_non_default_paths_pass(interpreted: tuple[str, dict[str, Any]]) -> None:
    problem, result = interpreted
    for kwargs, ok, message in result["variants"]:
        assert ok, f"{problem} {kwargs}: {message}"


def test_misread_inputs_fail_the_check(interpreted: tuple[str, dict[str, Any]]) -> None:
    problem, result = interpreted
    for case, ok, message in result["misread"]:
        assert not ok, f"{problem} {case}: output from misread inputs passed the check ({message})"
        assert "mismatch" in message


def test_files_are_contest_submissions() -> None:
    for problem, path in SUBMISSIONS.items():
        lines = (ROOT / path).read_text().splitlines()
        assert lines[0] == f"#!POPCORN leaderboard {problem}"
        assert lines[1] == "#!POPCORN author harness-baselines"
        source = "\n".join(lines)
        assert "from task import input_t, output_t" in source
        assert "def custom_kernel(data: input_t) -> output_t:" in source
