"""Types a submission imports (``from task import input_t, output_t``), as the contest has them."""

from typing import TypedDict, TypeVar

import torch

input_t = TypeVar(
    "input_t",
    bound=tuple[
        list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
        list[tuple[torch.Tensor, torch.Tensor]],
        list[tuple[torch.Tensor, torch.Tensor]],
        list[tuple[int, int, int, int]],
    ],
)
output_t = TypeVar("output_t", bound=list[torch.Tensor])


class TestSpec(TypedDict):
    m: list[int]
    n: list[int]
    k: list[int]
    g: int
    seed: int
