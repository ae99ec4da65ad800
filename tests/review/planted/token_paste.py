"""Planted: a CUDA API name token-pasted in inline source, so a text search for it finds nothing."""

from torch.utils.cpp_extension import load_inline

from reference import ref_kernel

SOURCE = r"""
#define CALL3(a, b, c) a##b##c
void mark(void* event) {
    CALL3(cuda, Event, Record)((cudaEvent_t)event, 0);
}
"""


def custom_kernel(data):
    load_inline("mark", cpp_sources="", cuda_sources=SOURCE, functions=["mark"])
    return ref_kernel(data)
