"""``python -m harness calibrate``: this machine's measured ceilings, beside the datasheet's.

The speed of light (harness/sol.py) is computed from datasheet peaks; what a GPU actually
reaches is lower (the lent H100 copies at ~3.0 of its 3.35 TB/s). The report shows a kernel's
time against both, so this module measures the two ceilings that matter here, once per device:
device-to-device copy bandwidth (bytes read + written) and the dense fp16/bf16 matmul rate
(fp32 on the CPU). Results are cached in results/calibration.json keyed by device name.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CACHE_PATH = Path(__file__).resolve().parent.parent / "results" / "calibration.json"
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
NO_GPU_EXIT = 110  # harness.results.ExitCode.CUDA_FAILURE: "no usable GPU"


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


def load_calibration(device_name: str, cache_path: Path | None = None) -> dict[str, Any] | None:
    """The cached record of a device (as torch names it; "cpu" for the CPU), or None."""
    record = _read_cache(cache_path or CACHE_PATH).get(device_name)
    return record if isinstance(record, dict) else None


def calibrate(device: str, *, force: bool = False, cache_path: Path | None = None,
              **sizes: int) -> tuple[dict[str, Any], bool]:
    """(record, reused): the cached record of this device unless force, else a new measurement."""
    path = cache_path or CACHE_PATH
    name = device_name(device)
    cached = None if force else load_calibration(name, path)
    if cached is not None:
        return cached, True
    record = measure(device, **sizes)
    devices = _read_cache(path)
    devices[name] = record
    _write_cache(path, devices)
    return record, False


def _versus_datasheet(record: dict[str, Any]) -> list[str]:
    """Measured ceilings as a percentage of the device table's peaks, when the device is known."""
    from harness.sol import UnknownDeviceError, load_table, resolve_device

    try:
        entry = load_table().devices[resolve_device(record["device_name"])]
    except UnknownDeviceError:
        return ["  (not in harness/devices.yml: no datasheet figures to compare with)"]
    kind = "nominal" if entry.key == "cpu" else "datasheet"
    lines = [f"  copy = {100 * record['copy_bytes_per_s'] / entry.dram_bytes_per_s:.0f}% of the {kind} "
             f"{entry.dram_bytes_per_s / 1e12:.3g} TB/s DRAM peak ({entry.key})"]
    for label, rate in record["matmul_flops_per_s"].items():
        peak = entry.tensor_dense_flops_per_s.get(label) or entry.vector_flops_per_s.get(label)
        if peak:
            lines.append(f"  {label} matmul = {100 * rate / peak:.0f}% of the {kind} {peak / 1e12:.4g} TFLOP/s")
    return lines


def render(record: dict[str, Any], reused: bool, path: Path) -> str:
    how = "cached" if reused else "measured"
    lines = [f"calibration of {record['device_name']} ({how} {record['measured_at']}; {path})",
             f"  device-to-device copy: {record['copy_bytes_per_s'] / 1e12:.3f} TB/s (bytes read + written, "
             f"{record['copy_bytes'] / 2**20:.0f} MiB buffer)"]
    for label, rate in record["matmul_flops_per_s"].items():
        lines.append(f"  {label} matmul {record['matmul_n']}^3: {rate / 1e12:.2f} TFLOP/s")
    lines.append(f"  method: {record['method']}; {record['detail']}")
    return "\n".join(lines + _versus_datasheet(record))


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _handle(args: argparse.Namespace) -> int:
    device = args.device
    if device is None:
        device = "cuda" if _cuda_available() else "cpu"
        if device == "cpu":
            print("note: no CUDA GPU visible: calibrating the CPU (give --device cuda on a GPU machine)",
                  file=sys.stderr)
    path = Path(args.cache) if args.cache else CACHE_PATH
    try:
        record, reused = calibrate(device, force=args.force, cache_path=path)
    except NoGpuError as error:
        print(f"error: --device cuda: {error}", file=sys.stderr)
        return NO_GPU_EXIT
    except RuntimeError as error:  # a CUDA fault or out of memory while measuring
        print(f"error: calibration failed on {device}: {' '.join(str(error).split())[:300]}", file=sys.stderr)
        return NO_GPU_EXIT
    print(render(record, reused, path))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("calibrate", help="measure this GPU's copy bandwidth and matmul rate (cached)")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda when a GPU is visible, else cpu")
    parser.add_argument("--force", action="store_true", help="measure again even if results/calibration.json has it")
    parser.add_argument("--cache", help=f"cache file (default: {CACHE_PATH.relative_to(CACHE_PATH.parent.parent)})")
    parser.set_defaults(handler=_handle)
