"""Honest Triton under the syscall filter: the shipped Triton GEMV (submissions/nvfp4_gemv/triton_gemv.py),
loaded as it is. On the CPU it runs through Triton's interpreter; on a GPU as compiled kernels (a
compiler in a subprocess, a launcher library loaded after the import, the driver's JIT): all of it
must pass with every rule on."""

import importlib.util
from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[3] / "submissions" / "nvfp4_gemv" / "triton_gemv.py"
_spec = importlib.util.spec_from_file_location("shipped_triton_gemv", SHIPPED)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
custom_kernel = _module.custom_kernel
