"""Types a submission imports (``from task import input_t, output_t``), in the contest's style."""

from typing import TypedDict, TypeVar

import torch

input_t = TypeVar(
    "input_t",
    bound=tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
)
output_t = TypeVar("output_t", bound=torch.Tensor)


class TestSpec(TypedDict):
    m: int
    n: int
    k: int
    seed: int
