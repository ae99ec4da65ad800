"""This machine's measured ceilings (``python -m harness calibrate``), beside the datasheet's.

The speed of light (harness.sol.breakdown) is computed from datasheet peaks; what a GPU actually
reaches is lower (the lent H100 copies at ~3.0 of its 3.35 TB/s). The report shows a kernel's
time against both, so this module measures the two ceilings that matter here, once per device:
device-to-device copy bandwidth (bytes read + written) and the dense fp16/bf16 matmul rate
(fp32 on the CPU); on a GPU the record also keeps the harness's error against graph replay
(harness.sol.fidelity, added by ``store_entry``). Results are cached in results/calibration.json keyed by device name
(``$NVFP4_CALIBRATION_CACHE`` elsewhere: the tests keep it in a temporary folder).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_PATH = Path(__file__).resolve().parents[2] / "results" / "calibration.json"
CACHE_ENV = "NVFP4_CALIBRATION_CACHE"
CACHE_FORMAT = 1
# Sizes: the copy moves 1 GiB on a GPU (20x an H100's 50 MiB L2, so DRAM is what is timed);
# 8192^3 is large enough for cuBLAS to reach its plateau. The CPU sizes keep a run to seconds.
GPU_COPY_BYTES = 512 * 2**20
GPU_MATMUL_N = 8192
GPU_REPEATS = 20
CPU_COPY_BYTES = 256 * 2**20
CPU_MATMUL_N = 2048
CPU_REPEATS = 5
WARMUP_CALLS = 3
NO_GPU_EXIT = 110  # harness.contract.results.ExitCode.CUDA_FAILURE: "no usable GPU"


class NoGpuError(RuntimeError):
    """--device cuda on a machine where torch sees no CUDA GPU."""


def _median_s(run: Callable[[], object], repeats: int, device: str) -> float:
    """Median seconds of one call after warm-up: CUDA events on a GPU, perf_counter on the CPU."""
    import torch

    for _ in range(WARMUP_CALLS):
        run()
    if device == "cpu":
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in pairs:
        start.record()
        run()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) / 1e3 for start, end in pairs)


def _cpu_model() -> str:
    with_model = [line for line in _read_lines("/proc/cpuinfo") if line.startswith("model name")]
    return with_model[0].split(":", 1)[1].strip() if with_model else (platform.processor() or platform.machine())


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def device_name(device: str) -> str:
    """The cache key: torch.cuda.get_device_name() on a GPU, "cpu" on the CPU (as harness.sol names it)."""
    import torch

    if device == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        raise NoGpuError("no CUDA GPU is visible (torch.cuda.is_available() is False); use --device cpu")
    return torch.cuda.get_device_name()


def _copy_s(device: str, copy_bytes: int, repeats: int) -> float:
    """Median seconds of one device-to-device copy (random bytes: zeros could be compressed)."""
    import torch

    source = torch.empty(copy_bytes, dtype=torch.uint8, device=device).random_(0, 256)
    target = torch.empty_like(source)
    return _median_s(lambda: target.copy_(source), repeats, device)


def _matmul_s(device: str, dtype: object, n: int, repeats: int) -> float:
    """Median seconds of one dense n x n x n matmul in dtype."""
    import torch

    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    out = torch.empty_like(a)
    return _median_s(lambda: torch.matmul(a, b, out=out), repeats, device)


def measure(device: str, *, copy_bytes: int | None = None, matmul_n: int | None = None,
            repeats: int | None = None) -> dict[str, Any]:
    """Measure copy bandwidth and matmul rate on "cuda" or "cpu"; the sizes default per device."""
    import torch

    if device not in ("cuda", "cpu"):
        raise ValueError(f"device must be 'cuda' or 'cpu', got {device!r}")
    name = device_name(device)
    on_gpu = device == "cuda"
    copy_bytes = copy_bytes or (GPU_COPY_BYTES if on_gpu else CPU_COPY_BYTES)
    matmul_n = matmul_n or (GPU_MATMUL_N if on_gpu else CPU_MATMUL_N)
    repeats = repeats or (GPU_REPEATS if on_gpu else CPU_REPEATS)

    copy_s = _copy_s(device, copy_bytes, repeats)
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16} if on_gpu else {"fp32": torch.float32}
    rates = {label: 2.0 * matmul_n**3 / _matmul_s(device, dtype, matmul_n, repeats) for label, dtype in dtypes.items()}
    return {
        "device_name": name,
        "device": device,
        "copy_bytes_per_s": 2.0 * copy_bytes / copy_s,  # each byte is read once and written once
        "matmul_flops_per_s": rates,
        "copy_bytes": copy_bytes,
        "matmul_n": matmul_n,
        "repeats": repeats,
        "method": ("median of CUDA event pairs after warm-up" if on_gpu else
                   f"median of perf_counter intervals after warm-up, {torch.get_num_threads()} threads"),
        "detail": f"torch {torch.__version__}" + ("" if on_gpu else f", {_cpu_model()}"),
        "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    devices = data.get("devices") if isinstance(data, dict) else None
    return devices if isinstance(devices, dict) else {}


def _write_cache(path: Path, devices: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps({"format": CACHE_FORMAT, "devices": devices}, indent=2, sort_keys=True) + "\n")
    partial.replace(path)  # atomic: a reader never sees half a file


def default_cache_path() -> Path:
    """``$NVFP4_CALIBRATION_CACHE``, else results/calibration.json in the checkout."""
    return Path(os.environ.get(CACHE_ENV) or CACHE_PATH)


def load_calibration(device_name: str, cache_path: Path | None = None) -> dict[str, Any] | None:
    """The cached record of a device (as torch names it; "cpu" for the CPU), or None."""
    record = _read_cache(cache_path or default_cache_path()).get(device_name)
    return record if isinstance(record, dict) else None


def calibrate(device: str, *, force: bool = False, cache_path: Path | None = None,
              **sizes: int) -> tuple[dict[str, Any], bool]:
    """(record, reused): the cached record of this device unless force, else a new measurement."""
    path = cache_path or default_cache_path()
    name = device_name(device)
    cached = None if force else load_calibration(name, path)
    if cached is not None:
        return cached, True
    record = measure(device, **sizes)
    devices = _read_cache(path)
    devices[name] = record
    _write_cache(path, devices)
    return record, False


def store_entry(device_name: str, key: str, value: Any, cache_path: Path | None = None) -> dict[str, Any]:
    """Add ``key`` to a device's cached record (which ``calibrate`` wrote first); returns the record."""
    path = cache_path or default_cache_path()
    devices = _read_cache(path)
    record = devices.get(device_name)
    if not isinstance(record, dict):
        raise KeyError(f"{device_name} has no calibration record in {path} to add {key} to")
    record[key] = value
    _write_cache(path, devices)
    return record
