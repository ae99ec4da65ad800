"""Extensions built only for other GPUs are refused before nvcc runs (the H100's sm_100a contest files)."""

import functools

import pytest

from harness.judge.verdict.hardware_verdict import diagnose
from harness.worker import extension_arch

H100 = {"type": "cuda", "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}


def fake_builders(monkeypatch) -> list:
    """Replace torch's load_inline and load by recorders with their real signatures; returns the record."""
    from torch.utils import cpp_extension

    built = []
    for name in ("load_inline", "load"):
        real = getattr(cpp_extension, name)
        monkeypatch.setattr(cpp_extension, name, functools.wraps(real)(lambda *a, **k: built.append(k) or "module"))
    return built


@pytest.mark.parametrize(("flags", "arch_list", "device", "refused"), [
    (["-O3", "-arch=sm_100a"], None, 90, True),  # the contest files' flags
    (["-gencode=arch=compute_100a,code=sm_100a", "--use_fast_math"], None, 90, True),
    ([], "10.0a", 90, True),  # TORCH_CUDA_ARCH_LIST set by the submission
    (["-arch=sm_100a"], None, 100, False),  # on Blackwell it builds
    (["-gencode=arch=compute_90a,code=sm_90a", "-gencode=arch=compute_100a,code=sm_100a"], None, 90, False),
    (["-arch=sm_80"], None, 90, False),  # older plain targets carry PTX that runs here
    (["-arch=sm_100f"], None, 103, False),  # a family target runs across its major version
    (["-O3"], None, 90, False),  # no architecture named: torch builds for this GPU
    ([], "9.0;10.0a", 90, False),
    ([], "Hopper;10.0a", 90, False),  # a name it cannot read: the build goes ahead
])
def test_a_build_is_refused_only_when_no_requested_target_runs_here(flags, arch_list, device, refused):
    assert (extension_arch.refusal(flags, arch_list, device) is not None) == refused


def test_the_refusal_reads_as_the_failed_load_and_becomes_unsupported(monkeypatch):
    from torch.utils import cpp_extension

    built = fake_builders(monkeypatch)
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    extension_arch.install(90)
    assert cpp_extension.load_inline(name="ok", cpp_sources="", cuda_sources="k", extra_cuda_cflags=["-O3"]) == "module"
    with pytest.raises(RuntimeError, match="no kernel image is available") as refused:
        cpp_extension.load_inline("k", "", "__global__ void k() {}", extra_cuda_cflags=["-arch=sm_100a"])
    assert len(built) == 1  # the refused build never reached nvcc
    for source in ('extra_cuda_cflags=["-arch=sm_100a"]', 'flags = [f"-arch=sm_{cc}a"]'):  # tokens or none
        verdict = diagnose(f"RuntimeError: {refused.value}", source, H100)
        assert verdict is not None and verdict.startswith("needs an sm_100 (Blackwell) GPU"), source


def test_builds_without_cuda_sources_are_left_alone(monkeypatch):
    """C++-only extensions never run nvcc, so their flags cannot fail on this GPU."""
    from torch.utils import cpp_extension

    built = fake_builders(monkeypatch)
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "10.0a")
    extension_arch.install(90)
    assert cpp_extension.load_inline(name="cpu_only", cpp_sources="int f() { return 1; }") == "module"
    assert cpp_extension.load(name="cpu_only", sources=["f.cpp"]) == "module"
    with pytest.raises(RuntimeError, match="no kernel image"):
        cpp_extension.load(name="gpu", sources=["f.cpp", "k.cu"])
    assert len(built) == 2
