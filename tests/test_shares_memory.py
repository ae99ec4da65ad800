"""The worker's check that custom_kernel returned none of its inputs (harness/worker/outputs.py):
storages compared by their spans, every output against every operand, in one pass."""

import pytest
import torch

from harness.worker.outputs import any_shares_memory, storage_spans


def test_an_output_in_any_operands_storage_is_found_whichever_output_it_is():
    operands = [torch.zeros(64) for _ in range(5)]
    outputs = [torch.zeros(8) for _ in range(7)]
    assert not any_shares_memory(outputs, storage_spans(operands))
    outputs.append(operands[3][10:20])  # the last output, a view into the fourth operand's storage
    assert any_shares_memory(outputs, storage_spans(operands))


@pytest.mark.parametrize(("output", "shared"), [
    (lambda base: base[5:9], True),  # a slice: the same storage
    (lambda base: base.view(4, 16).t(), True),  # a transposed view
    (lambda base: base[:0], False),  # empty: nothing to share
    (lambda base: base.clone(), False),  # a copy
    (lambda base: torch.empty(64, device="meta"), False),  # another device
])
def test_views_share_and_copies_do_not(output, shared: bool):
    base = torch.zeros(64)
    assert any_shares_memory([output(base)], storage_spans([base])) is shared


def test_an_empty_operand_shares_nothing():
    base = torch.zeros(64)
    assert not any_shares_memory([base], storage_spans([base[:0]]))


def test_neighbouring_storages_do_not_overlap():
    # Two storages carved out of one buffer end to end: the end of one is the start of the other.
    buffer = torch.zeros(128)
    first, second = torch.empty(0), torch.empty(0)
    first.set_(buffer.untyped_storage()[:256], 0, (64,))
    second.set_(buffer.untyped_storage()[256:], 0, (64,))
    assert not any_shares_memory([first], storage_spans([second]))
    assert any_shares_memory([first], storage_spans([buffer]))
