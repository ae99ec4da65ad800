"""The CuTe DSL GEMV submission (submissions/nvfp4_gemv/cute_gemv.py).

Where nvidia-cutlass-dsl is installed, the kernel is compiled for sm_90a through the whole
backend (libNVVM / ptxas). nvidia-cutlass-dsl 4.8.1 does this with no GPU and no driver; older
releases that ask for the driver at compile time skip that part. A negative control proves the
backend really runs: fp4 `.to(Float32)` must be rejected for sm_90a. Where a CUDA GPU is
present, the kernel is also checked against the reference on the task's test shapes.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from problems.nvfp4_gemv.reference import VECTOR_PAD_ROWS

cutlass = pytest.importorskip("cutlass", reason="CuTe DSL is not installed: pip install '.[cute]'")
cute = pytest.importorskip("cutlass.cute", reason="CuTe DSL is not installed: pip install '.[cute]'")

ROOT = Path(__file__).resolve().parents[1]
SUBMISSION = ROOT / "submissions" / "nvfp4_gemv" / "cute_gemv.py"
TASK = ROOT / "problems" / "nvfp4_gemv" / "task.py"
ARCH = "sm_90a"
DRIVER_HINTS = ("cuInit", "CUDA Driver", "libcuda", "NVIDIA driver", "display driver")


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def submission():
    """The submission module, imported as the harness worker does (with `task` importable)."""
    saved = {name: sys.modules.get(name) for name in ("task", "cute_gemv_under_test")}
    try:
        _load("task", TASK)
        yield _load("cute_gemv_under_test", SUBMISSION)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _compile_ptx(arch: str, dump_dir: Path, function, *args) -> str:
    """cute.compile for `arch`, returning the PTX; skips (with the reason) where this release needs
    a driver to compile."""
    try:
        compiled = cute.compile(function, *args, options=f"--gpu-arch={arch} --keep-ptx --dump-dir={dump_dir}")
        ptx = compiled.__ptx__ or ""
        return Path(ptx).read_text() if ptx.endswith(".ptx") else ptx
    except Exception as error:
        text = f"{type(error).__name__}: {error}"
        if not torch.cuda.is_available() and any(hint in text for hint in DRIVER_HINTS):
            version = importlib.metadata.version("nvidia-cutlass-dsl")
            pytest.skip(f"nvidia-cutlass-dsl {version} needs the CUDA driver to compile; 4.8.1 compiles without one")
        raise


def _fake_pointers(m: int, k: int, l: int) -> tuple[list, tuple]:
    """Pointers and strides of the contest's layouts; compiling never touches the addresses."""
    from cutlass.cute.runtime import make_ptr

    kinds = [(cutlass.Int32, 16), (cutlass.Uint16, 2), (cutlass.Int32, 16), (cutlass.Uint16, 2), (cutlass.Float16, 2)]
    pointers = [make_ptr(t, (1 + i) << 24, cute.AddressSpace.gmem, assumed_align=a) for i, (t, a) in enumerate(kinds)]
    rows = VECTOR_PAD_ROWS
    strides = (k // 8, m * k // 8, k // 32, m * k // 32, rows * k // 8, rows * k // 32, 1, m)
    return pointers, strides


@pytest.mark.parametrize(
    "m, k, l",
    [(128, 256, 1), (2432, 4608, 2), (7168, 16384, 1), (40, 64, 1), (130, 192, 3)],
    ids=["test-shape", "test-shape-l2", "benchmark-shape", "ragged-rows", "ragged-k"],
)
def test_compiles_for_sm90a(submission, tmp_path, m, k, l):
    """The kernel goes through libNVVM and ptxas for sm_90a: vector loads, no e2m1 cvt."""
    import cuda.bindings.driver as cuda

    pointers, strides = _fake_pointers(m, k, l)
    ptx = _compile_ptx(ARCH, tmp_path, submission.gemv_host, *pointers, cuda.CUstream(0), m, k, l, strides)
    assert ptx and f".target {ARCH}" in ptx
    assert re.search(r"ld\.global(\.nc)?\.v4\.[bus]32", ptx)  # 128-bit loads of A and of the vector
    assert "e2m1" not in ptx  # the instruction sm_90a lacks
    assert "dp4a" in ptx and "prmt" in ptx


def test_backend_rejects_fp4_convert_on_sm90a():
    """Negative control: the compile check reaches the backend, which refuses `cvt ... e2m1x2` on sm_90a."""
    from cutlass.cute.runtime import make_ptr

    @cute.kernel
    def convert(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        codes = cute.make_rmem_tensor((8,), cutlass.Float4E2M1FN)
        cute.autovec_copy(cute.local_tile(src, (8,), (tidx,)), codes)
        cute.local_tile(dst, (8,), (tidx,)).store(codes.load().to(cutlass.Float32))

    @cute.jit
    def host(src_ptr: cute.Pointer, dst_ptr: cute.Pointer):
        src = cute.make_tensor(src_ptr, cute.make_layout((64,)))
        dst = cute.make_tensor(dst_ptr, cute.make_layout((64,)))
        convert(src, dst).launch(grid=(1, 1, 1), block=(8, 1, 1))

    src = make_ptr(cutlass.Float4E2M1FN, 1 << 24, cute.AddressSpace.gmem, assumed_align=16)
    dst = make_ptr(cutlass.Float32, 2 << 24, cute.AddressSpace.gmem, assumed_align=16)
    with pytest.raises(Exception) as error:
        cute.compile(host, src, dst, options=f"--gpu-arch={ARCH}")
    assert not any(hint in str(error.value) for hint in DRIVER_HINTS), str(error.value)[:500]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (sm_90 or later)")
def test_matches_reference_on_gpu(submission):
    from problems.nvfp4_gemv import reference

    shapes = [(128, 256, 1), (512, 1536, 2), (40, 64, 1), (130, 192, 3)]
    for m, k, l in shapes:
        data = reference.generate_input(m=m, k=k, l=l, seed=1234, device="cuda")
        output = submission.custom_kernel(data)
        torch.cuda.synchronize()
        ok, message = reference.check_implementation(data, output)
        assert ok, f"({m}, {k}, {l}): {message}"
