"""Speed of light: the device table, the bound of each case, and this GPU's measured ceilings.

``harness.sol.speed_of_light(problem, case, device) -> seconds`` is the stable entry point.
"""

from harness.sol.breakdown import speed_of_light

__all__ = ["speed_of_light"]
