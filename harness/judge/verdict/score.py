"""Scoring: the one aggregate the contest ranks by. Tiny and pure, so it is tested directly."""

from __future__ import annotations

import math
from collections.abc import Sequence


def geometric_mean(values: Sequence[float]) -> float | None:
    """Geometric mean of positive values; None when there are none or one is not positive/finite."""
    if not values or any(not v > 0 or math.isinf(v) for v in values):
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))
