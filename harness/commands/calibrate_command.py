"""``python -m harness calibrate``: measure this GPU's copy bandwidth, matmul rate and the harness's
error against graph replay (the bound printed beside each median), once, cached."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness.contract.results import ExitCode, Status
from harness.contract.task_spec import Task, TaskError, list_problems, load_task, shape_text
from harness.judge.passes import vendor_cache
from harness.judge.passes.vendor_yardstick import vendor_times
from harness.judge.run import evaluate_submission
from harness.judge.verdict.modes import MODES
from harness.sol import fidelity, replay_clock
from harness.sol.breakdown import UnknownDeviceError, load_table, resolve_device
from harness.sol.calibration import CACHE_PATH, NO_GPU_EXIT, NoGpuError, calibrate, default_cache_path, store_entry

LADDER = "timing_ladder"
LADDER_FILE = Path(__file__).resolve().parents[2] / "submissions" / LADDER / "triton_ladder.py"


def _versus_datasheet(record: dict[str, Any]) -> list[str]:
    """Measured ceilings as a percentage of the device table's peaks, when the device is known."""
    try:
        entry = load_table().devices[resolve_device(record["device_name"])]
    except UnknownDeviceError:
        return ["  (not in harness/sol/devices.yml: no datasheet figures to compare with)"]
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
    return "\n".join(lines + _versus_datasheet(record) + _fidelity_lines(record))


def _fidelity_lines(record: dict[str, Any]) -> list[str]:
    """The harness's error against graph replay, rung by rung, and the bound the reports print (GPU only)."""
    if record.get("device") != "cuda":
        return []
    bound, source = fidelity.bound_of(record)
    if bound is None:
        return [f"  harness vs graph replay: no bound ({source})"]
    stored = record[fidelity.RECORD_KEY]
    by_shape: dict[str, list[dict[str, Any]]] = {}
    for point in stored["points"]:
        by_shape.setdefault(point["shape"], []).append(point)
    lines = [f"  harness vs graph replay, {len(by_shape)} timing-ladder rungs in {stored['processes']} worker "
             f"processes: bound {bound.text()} (under {stored['split_us']:g} us absolute, from it relative; "
             f"{stored['method']})"]
    for shape, points in by_shape.items():
        harness = sorted(point["harness_us"] for point in points)
        replay_us = points[0]["replay_us"]
        worst = max((point["harness_us"] - replay_us for point in points), key=abs)
        lines.append(f"    {shape}: harness {harness[0]:.2f}-{harness[-1]:.2f} us, replay {replay_us:.2f} us "
                     f"(worst {worst:+.2f} us, {100 * worst / replay_us:+.1f}%)")
    return lines


def measure_fidelity(device_name: str, path: Path) -> dict[str, Any]:
    """Every rung of the timing ladder by the harness (a benchmark run in each of fidelity.PROCESSES worker
    processes) and by the replay clock (harness.sol.replay_clock: %globaltimer stamps in the graph, the
    reading flush outside them); the pairs and the bound go into the device's record, which is returned."""
    task = load_task(LADDER)
    runs = [evaluate_submission(LADDER, LADDER_FILE, MODES["benchmark"], "cuda") for _ in range(fidelity.PROCESSES)]
    medians = [{shape_text(c.case): c.timing.median_us for c in result.cases
                if c.kind == "benchmark" and c.status == Status.PASSED and c.timing} for result in runs]
    for result, timed in zip(runs, medians, strict=True):
        if not timed:
            raise RuntimeError(f"a benchmark run of the timing ladder gave no median: {result.reason}")
    kernel, clock = replay_clock.load_shipped(LADDER_FILE), replay_clock.ReplayClock()
    points = []
    for case in task.benchmarks:
        shape = shape_text(case)
        if all(shape in timed for timed in medians):
            replay_us = clock.time(kernel, replay_clock.shape_inputs(LADDER, case)).us
            points += [fidelity.FidelityPoint(shape, timed[shape], replay_us) for timed in medians]
    method = (f"{runs[0].mode} mode of harness {runs[0].harness_version} against graph replay (%globaltimer "
              "stamps in the graph, reading flush outside them)")
    return store_entry(device_name, fidelity.RECORD_KEY, fidelity.entry(points, method), path)


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
    path = Path(args.cache) if args.cache else default_cache_path()
    try:
        record, reused = calibrate(device, force=args.force, cache_path=path)
        if device == "cuda" and (not reused or fidelity.RECORD_KEY not in record):
            print(f"measuring the harness's error against graph replay on the {LADDER} (a benchmark run, then the "
                  "replays)", file=sys.stderr)
            record = measure_fidelity(record["device_name"], path)
    except NoGpuError as error:
        print(f"error: --device cuda: {error}", file=sys.stderr)
        return NO_GPU_EXIT
    except RuntimeError as error:  # a CUDA fault or out of memory while measuring
        print(f"error: calibration failed on {device}: {' '.join(str(error).split())[:300]}", file=sys.stderr)
        return NO_GPU_EXIT
    print(render(record, reused, path))
    if args.vendor is not None:
        return _calibrate_vendor(args.vendor, device, record["device_name"])
    return 0


def measure_vendor(task: Task, device_name: str) -> dict[str, vendor_cache.VendorTime]:
    """Run the vendor file on this GPU's benchmark shapes and cache the times; returns them."""
    if task.vendor is None:
        return {}
    result = evaluate_submission(task.name, task.vendor.file, MODES["benchmark"], "cuda")
    times = vendor_times(task, result)
    vendor_cache.record(device_name, task.name, times)
    return times


def _calibrate_vendor(problems: list[str], device: str, device_name: str) -> int:
    """Time each problem's vendor file on this GPU (every problem that declares one, unless named)."""
    if device != "cuda":
        print("error: --vendor: vendor times need a CUDA GPU", file=sys.stderr)
        return NO_GPU_EXIT
    try:
        tasks = [load_task(name) for name in (problems or list_problems())]
    except TaskError as error:
        print(f"error: --vendor: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    for task in tasks:
        if task.vendor is None:
            print(f"vendor {task.name}: none declared (task.yml has no vendor file)")
            continue
        for shape, entry in measure_vendor(task, device_name).items():
            value = f"{entry.median_us:.2f} us" if entry.median_us else "-"
            print(f"vendor {task.name} {shape}: {value} ({entry.note})")
    print(f"vendor times cached in {vendor_cache.cache_path()}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("calibrate", help="measure this GPU's copy bandwidth, matmul rate and timing "
                                   "error against graph replay (cached)")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cuda when a GPU is visible, else cpu")
    parser.add_argument("--force", action="store_true", help="measure again even if results/calibration.json has it")
    parser.add_argument("--cache", help=f"cache file (default: {CACHE_PATH.relative_to(CACHE_PATH.parent.parent)})")
    parser.add_argument("--vendor", nargs="*", metavar="PROBLEM",
                        help="also time each problem's vendor library file (task.yml vendor) on this GPU, for the "
                             "reports' %% of vendor column (default: every problem that declares one)")
    parser.set_defaults(handler=_handle)
