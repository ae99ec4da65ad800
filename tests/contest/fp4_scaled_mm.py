#!POPCORN leaderboard nvfp4_gemm
# fp4 torch._scaled_mm, as many contest submissions do: it runs only on sm_100 GPUs.
import torch


def custom_kernel(data):
    a, b, sfa, sfb, _, _, _ = data
    return torch._scaled_mm(a[:, :, 0], b[:, :, 0].transpose(0, 1), sfa[:, :, 0].flatten(), sfb[:, :, 0].flatten(),
                            out_dtype=torch.float16)
