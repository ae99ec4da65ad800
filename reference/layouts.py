"""Scale-factor layouts: plain (rows, K/16), blocked (cuBLAS / tcgen05) and permuted (CuTe).

The layouts are byte layouts: the same functions serve NVFP4's e4m3 scales (K/16 a row) and
MXFP8's e8m0 scales (K/32 a row). Zero padding is byte 0, which is 0.0 in e4m3 but 2^-127 in
e8m0: either way it scales no element (no row or K block lies there).

Blocked: rows padded to a multiple of 128 and columns to a multiple of 4 (padding is zero),
cut into 128x4 tiles ordered row-block-major; each tile is 512 contiguous bytes, and the
scale at tile-local (r, c) sits at byte (r % 32) * 16 + (r // 32) * 4 + c.

Permuted: the same tiles as a (32, 4, rest_mn, 4, rest_k, L) tensor with
perm[r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, l] = sf[r, c, l]. Like the contest's, it
is a view of (L, rest_mn, rest_k, 32, 4, 4) storage, so its memory holds the blocked layout of
each batch in turn: CuTe kernels read it through ``data_ptr()`` with exactly that layout.
"""

from __future__ import annotations

import torch

TILE_ROWS = 128
TILE_COLS = 4


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _padded(sf: torch.Tensor) -> torch.Tensor:
    """Zero-pad a (rows, cols, ...) scale tensor to whole 128x4 tiles."""
    rows, cols = sf.shape[:2]
    padded_rows = ceil_div(rows, TILE_ROWS) * TILE_ROWS
    padded_cols = ceil_div(cols, TILE_COLS) * TILE_COLS
    if (padded_rows, padded_cols) == (rows, cols):
        return sf
    out = torch.zeros((padded_rows, padded_cols, *sf.shape[2:]), dtype=torch.uint8, device=sf.device)
    out[:rows, :cols] = sf.view(torch.uint8)
    return out.view(sf.dtype)


def to_blocked(sf: torch.Tensor) -> torch.Tensor:
    """Flatten a (rows, K/block) scale matrix into the blocked layout (1-D, zero padded)."""
    if sf.dim() != 2:
        raise ValueError(f"to_blocked takes one (rows, K/block) matrix, got shape {tuple(sf.shape)}")
    raw = _padded(sf).view(torch.uint8)
    row_blocks, col_blocks = raw.shape[0] // TILE_ROWS, raw.shape[1] // TILE_COLS
    # (row_block, r//32 = 4, r%32 = 32, col_block, c = 4) -> (row_block, col_block, r%32, r//32, c)
    tiles = raw.view(row_blocks, 4, 32, col_blocks, TILE_COLS).permute(0, 3, 2, 1, 4)
    return tiles.contiguous().flatten().view(sf.dtype)


def from_blocked(blocked: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Recover the (rows, cols) scale matrix from its blocked layout."""
    row_blocks, col_blocks = ceil_div(rows, TILE_ROWS), ceil_div(cols, TILE_COLS)
    expected = row_blocks * col_blocks * TILE_ROWS * TILE_COLS
    if blocked.numel() != expected:
        raise ValueError(f"a blocked ({rows}, {cols}) scale matrix has {expected} bytes, got {blocked.numel()}")
    tiles = blocked.view(torch.uint8).view(row_blocks, col_blocks, 32, 4, TILE_COLS)
    plain = tiles.permute(0, 3, 2, 1, 4).reshape(row_blocks * TILE_ROWS, col_blocks * TILE_COLS)
    return plain[:rows, :cols].contiguous().view(blocked.dtype)


def to_permuted(sf: torch.Tensor) -> torch.Tensor:
    """(rows, K/16, L) scales -> the (32, 4, rest_mn, 4, rest_k, L) tensor CuTe kernels take."""
    if sf.dim() != 3:
        raise ValueError(f"to_permuted takes (rows, K/16, L) scales, got shape {tuple(sf.shape)}")
    raw = _padded(sf).view(torch.uint8)
    rest_mn, rest_k = raw.shape[0] // TILE_ROWS, raw.shape[1] // TILE_COLS
    # rows r = rest_mn_idx * 128 + r128 * 32 + r32 ; cols c = rest_k_idx * 4 + c4
    split = raw.view(rest_mn, 4, 32, rest_k, TILE_COLS, raw.shape[2])
    # Storage (L, rest_mn, rest_k, r32, r128, c4), then viewed as (r32, r128, rest_mn, c4, rest_k, L).
    storage = split.permute(5, 0, 3, 2, 1, 4).contiguous()
    return storage.permute(3, 4, 1, 5, 2, 0).view(sf.dtype)


def from_permuted(perm: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Recover (rows, cols, L) scales from the permuted tensor."""
    if perm.dim() != 6 or tuple(perm.shape[:2]) != (32, 4) or perm.shape[3] != TILE_COLS:
        raise ValueError(f"expected a (32, 4, rest_mn, 4, rest_k, L) tensor, got shape {tuple(perm.shape)}")
    raw = perm.view(torch.uint8)
    rest_mn, rest_k, batches = raw.shape[2], raw.shape[4], raw.shape[5]
    plain = raw.permute(2, 1, 0, 4, 3, 5).reshape(rest_mn * TILE_ROWS, rest_k * TILE_COLS, batches)
    return plain[:rows, :cols].contiguous().view(perm.dtype)
