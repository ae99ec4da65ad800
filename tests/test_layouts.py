"""reference.layouts against the oracle's byte-offset and index formulas."""

from __future__ import annotations

import oracle
import pytest
import torch

from reference import formats, layouts


def random_scale_bytes(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Scale bytes 1..255 (never 0, so zero padding is told apart from data)."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(1, 256, shape, generator=gen, dtype=torch.uint8)


@pytest.mark.parametrize(("rows", "cols"), [(200, 9), (128, 4), (1, 1), (300, 13), (256, 8), (40, 3)])
def test_to_blocked_matches_the_offset_formula(rows, cols):
    plain = random_scale_bytes((rows, cols), seed=rows * cols)
    blocked = layouts.to_blocked(plain.view(formats.E4M3))
    assert blocked.dtype == formats.E4M3 and blocked.dim() == 1
    assert blocked.numel() == oracle.blocked_size(rows, cols)
    got = blocked.view(torch.uint8)
    written = torch.zeros(got.numel(), dtype=torch.bool)
    for r in range(rows):
        for c in range(cols):
            offset = oracle.blocked_offset(r, c, cols)
            assert got[offset] == plain[r, c], (r, c, offset)
            written[offset] = True
    assert got[~written].eq(0).all(), "padding must be zero"


def test_ragged_200_by_9_pads_to_256_by_12():
    plain = random_scale_bytes((200, 9), seed=7)
    got = layouts.to_blocked(plain).view(torch.uint8)
    assert got.numel() == 256 * 12
    assert torch.equal(got, oracle.blocked_from_plain(plain))
    # Rows 200..255 and columns 9..11 are padding: read them back through the formula.
    r = torch.arange(256).unsqueeze(1)
    c = torch.arange(12).unsqueeze(0)
    full = got[oracle.blocked_offset(r, c, 12)]
    assert torch.equal(full[:200, :9], plain)
    assert full[200:].eq(0).all() and full[:, 9:].eq(0).all()


def test_blocked_first_tile_by_hand():
    """Spot values straight from the prose: row 33, column 2 sits at byte 1 * 16 + 1 * 4 + 2."""
    plain = torch.zeros(256, 8, dtype=torch.uint8)
    plain[33, 2] = 11
    plain[127, 3] = 12
    plain[128, 4] = 13  # second row-block, second column-block: tile 3
    got = layouts.to_blocked(plain).view(torch.uint8)
    assert got[1 * 16 + 1 * 4 + 2] == 11
    assert got[31 * 16 + 3 * 4 + 3] == 12
    assert got[3 * 512 + 0] == 13
    assert int(got.ne(0).sum()) == 3


@pytest.mark.parametrize(("rows", "cols"), [(200, 9), (128, 4), (1, 1), (300, 13)])
def test_from_blocked_inverts_to_blocked(rows, cols):
    plain = random_scale_bytes((rows, cols), seed=rows + cols).view(formats.E4M3)
    blocked = layouts.to_blocked(plain)
    back = layouts.from_blocked(blocked, rows, cols)
    assert back.dtype == formats.E4M3 and back.shape == (rows, cols)
    assert torch.equal(back.view(torch.uint8), plain.view(torch.uint8))
    assert torch.equal(oracle.plain_from_blocked(blocked.view(torch.uint8), rows, cols), plain.view(torch.uint8))


def test_blocked_shape_errors():
    with pytest.raises(ValueError):
        layouts.to_blocked(torch.zeros(4, 4, 2, dtype=torch.uint8))
    with pytest.raises(ValueError):
        layouts.from_blocked(torch.zeros(100, dtype=torch.uint8), 128, 4)


def test_to_blocked_reads_a_batch_slice_of_the_contest_layout():
    """sf[:, :, l] of a (rows, K/16, L) view of (L, rows, K/16) storage, as the scaled_mm path passes it."""
    storage = random_scale_bytes((3, 130, 6), seed=9)
    sf = storage.permute(1, 2, 0)
    for l in range(3):
        assert torch.equal(layouts.to_blocked(sf[:, :, l]).view(torch.uint8), oracle.blocked_from_plain(storage[l]))


@pytest.mark.parametrize(("rows", "cols", "batches"), [(200, 9, 3), (128, 4, 1), (1, 1, 2), (300, 13, 2)])
def test_to_permuted_matches_the_index_formula(rows, cols, batches):
    storage = random_scale_bytes((batches, rows, cols), seed=rows * batches + cols)
    sf = storage.permute(1, 2, 0).view(formats.E4M3)  # the contest's (rows, K/16, L) view
    perm = layouts.to_permuted(sf)
    assert perm.dtype == formats.E4M3
    assert tuple(perm.shape) == oracle.permuted_shape(rows, cols, batches)
    got = perm.view(torch.uint8)
    written = torch.zeros(got.shape, dtype=torch.bool)
    for r in range(rows):
        for c in range(cols):
            for l in range(batches):
                index = oracle.permuted_index(r, c, l)
                assert got[index] == storage[l, r, c], (r, c, l, index)
                written[index] = True
    assert got[~written].eq(0).all(), "padding must be zero"


def test_permuted_memory_is_the_blocked_layout_of_each_batch():
    """CuTe kernels take ``sf_permuted.data_ptr()`` and read (L, rest_mn, rest_k, 512-byte tile).

    The contest builds the tensor as (L, rest_mn, rest_k, 32, 4, 4) storage permuted to
    (32, 4, rest_mn, 4, rest_k, L): walking it in memory order must give, batch by batch,
    exactly the blocked layout of sf[:, :, l].
    """
    rows, cols, batches = 200, 9, 3
    storage = random_scale_bytes((batches, rows, cols), seed=11)
    perm = layouts.to_permuted(storage.permute(1, 2, 0).view(formats.E4M3)).view(torch.uint8)
    rest_mn, rest_k = perm.shape[2], perm.shape[4]
    assert perm.stride() == (16, 4, rest_k * 512, 1, 512, rest_mn * rest_k * 512)
    in_memory_order = perm.permute(5, 2, 4, 0, 1, 3)
    assert in_memory_order.is_contiguous()
    for l in range(batches):
        assert torch.equal(in_memory_order[l].reshape(-1), oracle.blocked_from_plain(storage[l]))


@pytest.mark.parametrize(("rows", "cols", "batches"), [(200, 9, 3), (128, 4, 1), (1, 1, 2), (300, 13, 2)])
def test_from_permuted_inverts_to_permuted(rows, cols, batches):
    storage = random_scale_bytes((batches, rows, cols), seed=rows + batches)
    sf = storage.permute(1, 2, 0).view(formats.E4M3)
    perm = layouts.to_permuted(sf)
    back = layouts.from_permuted(perm, rows, cols)
    assert back.dtype == formats.E4M3 and back.shape == (rows, cols, batches)
    assert torch.equal(back.view(torch.uint8), sf.view(torch.uint8))
    assert torch.equal(oracle.plain_from_permuted(perm.view(torch.uint8), rows, cols), sf.view(torch.uint8))


def test_permuted_shape_errors():
    with pytest.raises(ValueError):
        layouts.to_permuted(torch.zeros(4, 4, dtype=torch.uint8))
    with pytest.raises(ValueError):
        layouts.from_permuted(torch.zeros(32, 4, 1, 4, 1, dtype=torch.uint8), 1, 1)
    with pytest.raises(ValueError):
        layouts.from_permuted(torch.zeros(4, 32, 1, 4, 1, 1, dtype=torch.uint8), 1, 1)


def test_ceil_div():
    assert [layouts.ceil_div(a, 4) for a in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
