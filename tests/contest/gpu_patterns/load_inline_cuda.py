#!POPCORN leaderboard nvfp4_gemv
"""A contest pattern on the GPU: CUDA C++ built by torch's load_inline (ninja, nvcc, the host
compiler: child processes under the worker's sandbox), its kernel applied to the reference's answer.

Both kernels go with ``<<<>>>`` on the legacy default stream, as much contest code does, the first
a 10 ms wait, longer than the reference takes: every median at or above 10 ms shows that work on
that stream falls inside the core's window, which runs on a blocking stream of its own (gpu_check.sh
``patterns`` checks it)."""

from torch.utils.cpp_extension import load_inline

from reference import ref_kernel

CUDA = r"""
__global__ void wait_ns(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
__global__ void copy_bytes(const unsigned char *source, unsigned char *target, long count) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < count) target[i] = source[i];
}
torch::Tensor copied(torch::Tensor source) {
    auto target = torch::empty_like(source);
    long count = source.numel() * source.element_size();
    wait_ns<<<1, 1>>>(10000000);
    copy_bytes<<<(count + 255) / 256, 256>>>((const unsigned char *)source.data_ptr(),
                                             (unsigned char *)target.data_ptr(), count);
    return target;
}
"""
extension = load_inline(name="gpu_pattern_copy", cpp_sources=["torch::Tensor copied(torch::Tensor source);"],
                        cuda_sources=[CUDA], functions=["copied"])


def custom_kernel(data):
    expected = ref_kernel(data).contiguous()
    return extension.copied(expected)
