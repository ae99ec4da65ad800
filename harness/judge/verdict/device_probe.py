"""The machine a run is on, as its result records it: the GPU's properties and its clocks now.

Read once per run by ``harness.judge.run`` into ``RunResult.device``; the report, the leaderboard
and ``hardware_verdict`` only read that record. Clocks come from nvidia-smi when present: reported,
never changed.
"""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import torch


def read_clocks(index: int = 0) -> dict[str, object]:
    """SM and memory clocks now, temperature and power, from nvidia-smi when present (else nothing)."""
    if shutil.which("nvidia-smi") is None:
        return {}
    query = "clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", str(index)],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    names = ("sm_clock_mhz", "max_sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w")
    return dict(zip(names, (v.strip() for v in out.split(","))))


def describe_device(device: str, index: int) -> dict[str, Any]:
    """``RunResult.device``: the CPU, or GPU ``index``'s name, capability, SMs, L2, memory and clocks."""
    # str(): torch's TorchVersion would make whoever unpickles the result import torch (a cluster's
    # client did, on its event loop, holding every other job's result and line for seconds: issue 35)
    info: dict[str, Any] = {"type": device, "name": torch.cuda.get_device_name(index) if device == "cuda" else "cpu",
                            "torch": str(torch.__version__)}
    if device == "cuda":
        props = torch.cuda.get_device_properties(index)
        info.update(capability=f"{props.major}.{props.minor}", sm_count=props.multi_processor_count,
                    l2_bytes=props.L2_cache_size, memory_bytes=props.total_memory)
        info.update(read_clocks(index))
    return info
