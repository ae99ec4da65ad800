"""Planted: a persisting-L2 window set from inline CUDA (torch.utils.cpp_extension.load_inline)."""

from torch.utils.cpp_extension import load_inline

from reference import ref_kernel

SOURCE = r"""
#include <cuda_runtime.h>
void keep(long ptr, long bytes) {
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, bytes);
    cudaStreamAttrValue value = {};
    value.accessPolicyWindow.base_ptr = (void*)ptr;
    value.accessPolicyWindow.num_bytes = bytes;
    value.accessPolicyWindow.hitRatio = 1.0f;
    cudaStreamSetAttribute(0, cudaStreamAttributeAccessPolicyWindow, &value);
}
"""
_module = None


def custom_kernel(data):
    global _module
    _module = _module or load_inline("keep_l2", cpp_sources="", cuda_sources=SOURCE, functions=["keep"])
    _module.keep(data[0].data_ptr(), data[0].numel())
    return ref_kernel(data)
