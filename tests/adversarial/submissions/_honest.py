"""Honest torch kernels the adversarial submissions reuse where their attack needs a right answer.

Not a submission itself (its name starts with an underscore): the harness puts a submission's
folder on sys.path, so ``import _honest`` works from every file here, on the CPU and on a GPU.
"""

import functools

import torch

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


@functools.cache
def _values(table: tuple[float, ...], device: torch.device) -> torch.Tensor:
    """The code table on ``device``, made once: a tensor from a Python list is a copy from pageable
    memory, which makes the host wait for everything queued before it (s23 gates its stream)."""
    return torch.tensor(table, device=device)


def dequantize(packed: torch.Tensor, scales: torch.Tensor, table: tuple[float, ...] = E2M1,
               high_nibble: bool = True) -> torch.Tensor:
    """(rows, K/2, L) fp4x2 codes and (rows, K/16, L) e4m3 scales -> (L, rows, K) float32."""
    values = _values(table, packed.device)
    raw = packed.view(torch.uint8).permute(2, 0, 1)
    high = raw >> 4 if high_nibble else torch.zeros_like(raw)
    codes = torch.stack((raw & 0xF, high), dim=-1).flatten(-2)
    blocks = values[codes.long()].unflatten(-1, (-1, 16))
    return (blocks * scales.permute(2, 0, 1).to(torch.float32).unsqueeze(-1)).flatten(-2)


def gemv(data, out: torch.Tensor | None = None, **decode) -> torch.Tensor:
    """nvfp4_gemv: c[:, 0, l] = A[:, :, l] @ B[0, :, l]; writes ``out`` (default: the c of data)."""
    a, b, sfa, sfb, _, _, c = data
    out = c if out is None else out
    product = torch.matmul(dequantize(a, sfa, **decode), dequantize(b[:1], sfb[:1], **decode).transpose(1, 2))
    out.copy_(product.permute(1, 2, 0))
    return out


def gemm(data, **decode) -> torch.Tensor:
    """nvfp4_gemm: C[m, n, l] = sum_k A[m, k, l] * B[n, k, l]."""
    a, b, sfa, sfb, _, _, c = data
    c.copy_(torch.matmul(dequantize(a, sfa, **decode), dequantize(b, sfb, **decode).transpose(1, 2)).permute(1, 2, 0))
    return c


def group_gemm(data) -> list[torch.Tensor]:
    """nvfp4_group_gemm: one GEMM per group; returns the list of the groups' c tensors."""
    abc, scales, _, _ = data
    outputs = []
    for (a, b, c), (sfa, sfb) in zip(abc, scales):
        c.copy_(torch.matmul(dequantize(a, sfa), dequantize(b, sfb).transpose(1, 2)).permute(1, 2, 0))
        outputs.append(c)
    return outputs


def gemv_rows(data, rows: slice) -> torch.Tensor:
    """nvfp4_gemv on a slice of A's rows, written into the same rows of c: the attacks' halves."""
    a, b, sfa, sfb, _, _, c = data
    return gemv((a[rows], b, sfa[rows], sfb, None, None, c[rows]))


def halves(data) -> tuple[slice, slice]:
    """The first and second half of the rows of an nvfp4_gemv call."""
    middle = data[0].shape[0] // 2
    return slice(0, middle), slice(middle, None)
