"""Failures caused by the machine (not the submission) are recognised from their real lines."""

import pytest

from harness.judge.verdict.hardware_verdict import diagnose

H100 = {"type": "cuda", "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}
B200 = {"type": "cuda", "name": "NVIDIA B200", "capability": "10.0"}
CPU = {"type": "cpu", "name": "cpu"}

# Lines the contest's own submission.py files printed (issue 12), and their sources' tell-tales.
CUTE_ARCH = "OpError: expects arch to be one of [Arch.sm_100a, Arch.sm_103a], but got Arch.sm_90a (at mma.py:319)"
CUBLAS = ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling "
          "cublasLtMatmulAlgoGetHeuristic(ltHandle, computeDesc.descriptor(), ...)")
PTXAS = "ptxas fatal: Instruction 'cvt with .e2m1x2' not supported on .target 'sm_90a'"


@pytest.mark.parametrize(
    ("reason", "source", "device", "needs"),
    [
        (CUTE_ARCH, "", H100, "needs an sm_100 (Blackwell) GPU"),
        (CUBLAS, "torch._scaled_mm(a, b", H100, "needs an sm_100 (Blackwell) GPU"),
        (PTXAS, "", H100, "needs an sm_100 (Blackwell) GPU"),
        ("AssertionError: Torch not compiled with CUDA enabled", "", CPU, "needs a CUDA GPU"),
        ("ValueError: Invalid scaling configuration", "torch._scaled_mm(", CPU, "needs an sm_100 (Blackwell) GPU"),
        # The worker keeps torch's dtype line (harness.worker.failures.headline): the recipe decides.
        ("RuntimeError: Invalid scaling configuration. (Got mat_a.dtype()=Float8_e4m3fn, scale_a.dtype()=Float, "
         "scale_a.size()=[128, 4])", "torch._scaled_mm(", CPU, "needs an sm_90 (Hopper) or newer GPU"),
        ("RuntimeError: Invalid scaling configuration. (Got mat_a.dtype()=Float8_e4m3fn, "
         "scale_a.dtype()=Float8_e8m0fnu)", "torch._scaled_mm(", CPU, "needs an sm_100 (Blackwell) GPU"),
        ("InterpreterError: AssertionError('')", "tl.inline_asm_elementwise(", CPU, "needs a CUDA GPU"),
        # A file's own refusal, as the shipped CuTe DSL GEMV words it.
        ("RuntimeError: cute_gemv runs on CUDA GPUs only (sm_90 or later) (at cute_gemv.py:231)", "", CPU,
         "needs a CUDA GPU"),
        ("ModuleNotFoundError: No module named 'cutlass'", "import cutlass", H100,
         "needs the CuTe DSL (nvidia-cutlass-dsl)"),
        # Seen on real contest files on a CPU-only machine (docs/results.md, run 5).
        ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.",
         "load_inline(", CPU, "needs a CUDA GPU"),
        ("OSError: CUDA_HOME environment variable is not set.", "load_inline(", H100, "needs the CUDA toolkit (nvcc)"),
        ("DSLCudaRuntimeError: ", "import cutlass.cute as cute", CPU, "needs a CUDA GPU"),
        ("DSLRuntimeError:  (at dsl.py:1796)", "import cutlass\nfrom cutlass.cute.nvgpu import tcgen05", CPU,
         "needs an sm_100 (Blackwell) GPU"),
        ("AttributeError: module 'cutlass.cute.arch' has no attribute 'ProxyKind'", "import cutlass", CPU,
         "needs the CuTe DSL release it was written for"),
        # Real contest files on an H100 (docs/results.md, run 7): sm_100a CUDA C++ and Triton PTX.
        ("RuntimeError: no kernel image is available for execution on the device (at v4_2.py:912)",
         'extra_cuda_cflags=["-arch=sm_100a"]', H100, "needs an sm_100 (Blackwell) GPU"),
        ("AcceleratorError: CUDA error: no kernel image is available for execution on the device",
         "-gencode=arch=compute_100a,code=sm_100a", H100, "needs an sm_100 (Blackwell) GPU"),
        ("RuntimeError: Error building extension 'nvfp4_gemm_sm100_ptx': [1/3] /usr/local/cuda/bin/nvcc",
         "tcgen05.mma.cta_group::1", H100, "needs an sm_100 (Blackwell) GPU"),
        ("PTXASError: PTXAS error: Internal Triton PTX codegen error (at compiler.py:529)",
         'tl.inline_asm_elementwise("cvt.rn.f16x2.e2m1x2 $0, $1;"', H100, "needs an sm_100 (Blackwell) GPU"),
        # A real contest file on an H200 (docs/results.md, run 47): CuTe DSL compiled for sm_100a, called.
        ("DSLRuntimeError: DSLRuntimeError: The compiled function does not have a valid execution engine. "
         "(at arseni.py:2790 in custom_kernel, via jit_executor.py:705)",
         'cute.compile(gemm, a_ptr, options="--opt-level 2 --gpu-arch sm_100a")', H100,
         "needs an sm_100 (Blackwell) GPU"),
    ],
)
def test_known_lines_name_what_is_needed_and_this_machine(reason, source, device, needs):
    verdict = diagnose(reason, source, device)
    assert verdict is not None and verdict.startswith(needs + ":")
    machine = "this machine: CPU only" if device is CPU else "this machine: NVIDIA H100 80GB HBM3 (sm_90)"
    assert machine in verdict and "instead:" in verdict


@pytest.mark.parametrize(
    ("reason", "source", "device"),
    [
        (CUTE_ARCH, "", B200),  # on Blackwell the same line is the submission's own bug
        (CUBLAS, "my_kernel()", H100),  # a cuBLAS failure without fp4 _scaled_mm is not this
        ("InterpreterError: AssertionError('')", "tl.load(", CPU),  # no inline PTX: a real bug
        ("AssertionError: Torch not compiled with CUDA enabled", "", H100),
        ("RuntimeError: index out of range", "", CPU),
        # A file that is not Blackwell code: its build error or missing image is its own bug.
        ("RuntimeError: Error building extension 'gemv': error: expected a ';'", "load_inline(", H100),
        ("RuntimeError: no kernel image is available for execution on the device", "-arch=sm_100a", B200),
        # A CuTe DSL kernel for this GPU that fails at run time: its own bug, on Hopper as on Blackwell.
        ("DSLRuntimeError: The compiled function does not have a valid execution engine.",
         'cute.compile(gemm, a_ptr, options="--gpu-arch sm_90a")', H100),
        ("DSLRuntimeError: The compiled function does not have a valid execution engine.",
         'cute.compile(gemm, a_ptr, options="--gpu-arch sm_100a")', B200),
        # Hopper code whose own build fails: naming sm_100 in a comment or using fp8 _scaled_mm is no excuse.
        ("RuntimeError: Error building extension 'gemv': error: expected a ';'",
         '# TODO: an sm_100 path\nload_inline(extra_cuda_cflags=["-arch=sm_90a"])', H100),
        ("RuntimeError: Error building extension 'gemv': error: expected a ';'",
         "torch._scaled_mm(a8, b8, scale_a, scale_b)\nload_inline(", H100),
    ],
)
def test_other_failures_stay_the_submissions(reason, source, device):
    assert diagnose(reason, source, device) is None


@pytest.mark.parametrize(("error", "kind"), [
    (RuntimeError("CUDA driver: end event failed (700: an illegal memory access was encountered)"), "cuda_error"),
    (RuntimeError("CUDA error: an illegal memory access was encountered"), "cuda_error"),
    (RuntimeError("index out of range"), "crashed"),
])
def test_a_fault_seen_by_the_timing_core_is_a_cuda_error(error, kind):
    """The core's driver calls report the submission's kernel fault (H100, docs/results.md run 7)."""
    from harness.worker.failures import classify as _classify

    assert _classify(error).kind == kind


def test_comments_and_docstrings_do_not_make_a_file_blackwell_only():
    """The shipped CuTe DSL GEMV explains in its docstring why it avoids `cvt ... e2m1x2` (sm_100a):
    on a CPU it needs a GPU, not a Blackwell one; PTX in a string literal still counts."""
    explained = '"""Decodes by hand: cvt ... e2m1x2 needs sm_100a."""\nimport torch  # not tcgen05\n'
    verdict = diagnose("RuntimeError: cute_gemv runs on CUDA GPUs only (sm_90 or later)", explained, CPU)
    assert verdict is not None and verdict.startswith("needs a CUDA GPU:")
    used = 'KERNEL = "cvt.rn.f16x2.e2m1x2 $0, $1;"\n'
    verdict = diagnose("RuntimeError: cute_gemv runs on CUDA GPUs only", used, CPU)
    assert verdict is not None and verdict.startswith("needs an sm_100 (Blackwell) GPU:")


def test_the_worker_keeps_the_dtype_line_of_a_refused_scaled_mm():
    from harness.worker.failures import headline

    text = ("RuntimeError: Invalid scaling configuration.\n- For TensorWise scaling, ...\n"
            "Got mat_a.dtype()=Float8_e4m3fn, scale_a.dtype()=Float, scale_a.size()=[128, 4]")
    assert headline(text).endswith("(Got mat_a.dtype()=Float8_e4m3fn, scale_a.dtype()=Float, scale_a.size()=[128, 4])")
    assert headline("ValueError: bad\nmore") == "ValueError: bad"
