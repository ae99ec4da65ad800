"""The honest twin of the L2 row (s18): the shipped Triton GEMV, unchanged, whose short time is where a
warm L2 shows (tests/adversarial/run_gpu.py compares the two)."""

import importlib.util
from pathlib import Path

BASELINE = Path(__file__).resolve().parents[3] / "submissions" / "nvfp4_gemv" / "triton_gemv.py"
spec = importlib.util.spec_from_file_location("triton_gemv_baseline", BASELINE)
baseline = importlib.util.module_from_spec(spec)
spec.loader.exec_module(baseline)


def custom_kernel(data):
    return baseline.custom_kernel(data)
