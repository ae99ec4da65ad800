"""Tell "this machine lacks what the submission needs" apart from a bug in the submission.

Many contest submissions are Blackwell-only (tcgen05 MMA, ``cvt ... e2m1x2``, fp4
``torch._scaled_mm``) or need a GPU at all; run on a Hopper GPU or a laptop they fail on every
shape with a raw compiler or cuBLAS line. The evaluator (trusted side) matches the failure's
reason against known signatures here and turns it into one ``unsupported`` verdict: what the
submission needs, what this machine is, what can be checked here instead.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.contract import python_ast

BLACKWELL = "an sm_100 (Blackwell) GPU"
ANY_GPU = "a CUDA GPU"
HOPPER = "an sm_90 (Hopper) or newer GPU"


@dataclass(frozen=True)
class Signature:
    """One known way a missing capability shows in an error line."""

    pattern: re.Pattern[str]
    needs: str
    why: str
    applies: str  # "gpu_below_sm100", "cpu" or "anywhere"
    source_hint: str | None = None  # a pattern the submission's source must contain as well


def _sig(pattern: str, needs: str, why: str, applies: str, source_hint: str | None = None) -> Signature:
    return Signature(re.compile(pattern, re.IGNORECASE), needs, why, applies, source_hint)


BLACKWELL_SOURCE = r"tcgen05|sm_10[03]a?\b|Sm100|e2m1x2|_scaled_mm\("
"""Tell-tales in a file's source that it needs Blackwell even where the error only says 'no GPU'."""

BLACKWELL_BUILD = r"(sm|compute)_10[03]a\b|\b10\.[03]a\b|tcgen05|e2m1x2"
"""Narrower: the file asks a compiler for sm_100a code or uses its instructions. A build or load
failure of a file without these (a comment that names sm_100, an fp8 _scaled_mm) is its own bug."""

SIGNATURES = (
    _sig(r"expects arch to be one of \[Arch\.sm_10|sm_10[03]a?\b.*(only|required|expect)", BLACKWELL,
         "it targets sm_100a/sm_103a (CuTe DSL tcgen05 MMA)", "gpu_below_sm100"),
    _sig(r"e2m1x2.*not supported on \.target|not supported on \.target 'sm_[0-9]+a?'", BLACKWELL,
         "its PTX uses instructions that need sm_100a (cvt ... e2m1x2)", "gpu_below_sm100"),
    _sig(r"\btcgen05|\bUMMA\b|\bTMEM\b", BLACKWELL, "it uses tcgen05 tensor-memory MMA", "gpu_below_sm100"),
    # Seen on an H100 (docs/results.md, run 7): CUDA C++ or Triton built for sm_100a fails to build or load;
    # on an H200 (run 47) a CuTe DSL kernel compiled with `--gpu-arch sm_100a` ("no valid execution engine").
    _sig(r"no kernel image is available|Error building extension|PTXAS error|ptxas (fatal|error)|"
         r"DSL(Cuda)?RuntimeError", BLACKWELL,
         "its CUDA code is built for sm_100a, and it cannot build or load on this GPU", "gpu_below_sm100",
         BLACKWELL_BUILD),
    # harness.extension_arch refused the build: the flags or arch list themselves name sm_100a/sm_103a.
    _sig(r"built only for (sm_10[03][af]?(, )?)+ and this GPU .*refused before nvcc ran", BLACKWELL,
         "its CUDA code is built for sm_100a only", "gpu_below_sm100"),
    _sig(r"CUBLAS_STATUS_NOT_SUPPORTED", BLACKWELL,
         "cuBLAS has no block-scaled NVFP4 or MXFP8 matmul below sm_100 (torch._scaled_mm)", "gpu_below_sm100",
         "_scaled_mm"),
    # On the CPU torch refuses every block-scaled _scaled_mm; the worker keeps the line naming the
    # dtypes (harness.worker.failures), which tells the recipe: fp32 block scales (DeepSeek-style
    # fp8) run in cuBLAS from sm_90, e8m0 (MXFP8) and fp4 operands only from sm_100.
    _sig(r"Invalid scaling configuration.*scale_a\.dtype\(\)=Float\b", HOPPER,
         "its fp8 torch._scaled_mm with fp32 block scales runs in cuBLAS on sm_90 and newer GPUs", "cpu"),
    _sig(r"Invalid scaling configuration.*Float8_e8m0fnu", BLACKWELL,
         "MXFP8 torch._scaled_mm (e8m0 scales) runs only on sm_100 GPUs", "cpu"),
    _sig(r"Invalid scaling configuration", BLACKWELL,
         "fp4 torch._scaled_mm runs only on sm_100 GPUs", "cpu", "_scaled_mm"),
    _sig(r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available|"
         r"libcuda\.so|CUDA driver (initialization failed|version is insufficient)|cudaGetDeviceCount|"
         r"(runs|works) on CUDA GPUs only|(requires|needs) a CUDA GPU",
         ANY_GPU, "it calls CUDA directly", "cpu"),
    _sig(r"InterpreterError", ANY_GPU, "its Triton kernel uses inline PTX, which the CPU interpreter cannot run",
         "cpu", "inline_asm"),
    _sig(r"CUDA_HOME environment variable is not set", ANY_GPU,
         "it builds CUDA C++ with torch's load_inline, which needs a GPU machine with the CUDA toolkit", "cpu"),
    _sig(r"CUDA_HOME environment variable is not set", "the CUDA toolkit (nvcc)",
         "it builds CUDA C++ with torch's load_inline; point CUDA_HOME at the toolkit", "anywhere"),
    _sig(r"DSL(Cuda)?RuntimeError", ANY_GPU, "its CuTe DSL kernel compiles and runs only with a CUDA GPU", "cpu",
         "cutlass"),
    _sig(r"No module named '(cutlass|cuda)\b", "the CuTe DSL (nvidia-cutlass-dsl)",
         "it imports the CuTe DSL, which is not installed here", "anywhere"),
    _sig(r"module 'cutlass[\w.]*' has no attribute", "the CuTe DSL release it was written for",
         "the installed nvidia-cutlass-dsl lacks a name it uses", "anywhere"),
)

INSTEAD = {
    (BLACKWELL, "cpu"): "nothing of this file runs here: check a portable torch or Triton version on the CPU, "
                        "rank it on a B200",
    (BLACKWELL, "cuda"): "run it on a B200; on this GPU, check a Hopper (sm_90) version",
    (HOPPER, "cpu"): "run it on an H100 or newer; a torch version that decodes the scales checks on the CPU",
    (ANY_GPU, "cpu"): "run it on a GPU machine; plain torch and Triton kernels without inline PTX check on the CPU",
    ("the CUDA toolkit (nvcc)", "cuda"): "install the CUDA toolkit and export CUDA_HOME",
    ("the CuTe DSL release it was written for", "cpu"): "pip install the nvidia-cutlass-dsl release it names",
    ("the CuTe DSL release it was written for", "cuda"): "pip install the nvidia-cutlass-dsl release it names",
}


def machine_text(device: Mapping[str, Any]) -> str:
    if device.get("type") != "cuda":
        return "this machine: CPU only (no CUDA GPU)"
    capability = str(device.get("capability", "?")).replace(".", "")
    return f"this machine: {device.get('name', 'a GPU')} (sm_{capability})"


def _applies(signature: Signature, device: Mapping[str, Any]) -> bool:
    if signature.applies == "anywhere":
        return True
    if signature.applies == "cpu":
        return device.get("type") != "cuda"
    major = str(device.get("capability", "0")).split(".")[0]
    return device.get("type") == "cuda" and major.isdigit() and int(major) < 10


def code_only(source: str) -> str:
    """The source without comments and docstrings: a file that explains why it avoids sm_100a
    instructions must not be taken for one that uses them. String literals stay (inline PTX)."""
    try:
        tree = python_ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return source
    lines = source.splitlines(keepends=True)
    spans = [(t.start, t.end) for t in tokens if t.type == tokenize.COMMENT]
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
                getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            first = body[0]
            spans.append(((first.lineno, first.col_offset), (first.end_lineno, first.end_col_offset)))
    for (row, col), (end_row, end_col) in sorted(spans, reverse=True):
        head, tail = lines[row - 1][:col], lines[end_row - 1][end_col:]
        lines[row - 1:end_row] = [head + tail]
    return "".join(lines)


def diagnose(reason: str, source: str, device: Mapping[str, Any]) -> str | None:
    """The one-line 'unsupported' verdict for a failure caused by this machine, else None."""
    source = code_only(source)
    for signature in SIGNATURES:
        if not signature.pattern.search(reason) or not _applies(signature, device):
            continue
        if signature.source_hint and not re.search(signature.source_hint, source):
            continue
        kind = "cuda" if device.get("type") == "cuda" else "cpu"
        needs, why = signature.needs, signature.why
        if needs == ANY_GPU and re.search(BLACKWELL_SOURCE, source):
            needs, why = BLACKWELL, f"{why}, and its source targets sm_100 (tcgen05, e2m1x2 or fp4 _scaled_mm)"
        instead = INSTEAD.get((needs, kind), "pip install -e '.[cute]' where the harness runs")
        return f"needs {needs}: {why}; {machine_text(device)}; instead: {instead}"
    return None
