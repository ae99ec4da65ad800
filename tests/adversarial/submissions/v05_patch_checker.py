"""Cheat 5: replace the problem's checker (and the shared comparison) with ones that always pass,
then return garbage. Checks run in the parent, which never imports this file."""

import problems.nvfp4_gemv.reference
import problems.shared.blockscaled


def _always_pass(*args, **kwargs):
    return True, "check: pass"


problems.nvfp4_gemv.reference.check_implementation = _always_pass
problems.shared.blockscaled.compare_outputs = _always_pass
problems.shared.blockscaled.compare_tensor = _always_pass


def custom_kernel(data):
    return data[-1]  # untouched: still the NaN the harness filled it with
