"""Types a submission imports (``from task import input_t, output_t``)."""

from typing import TypedDict, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor, int])
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    n: int
    iters: int
    seed: int
