"""``python -m harness sol PROBLEM [--device NAME]``: the speed-of-light table of a problem."""

from __future__ import annotations

import argparse
import math
import sys

from harness.contract.results import ExitCode
from harness.contract.task_spec import Task, TaskError, load_task, shape_text
from harness.display.tables import text_table
from harness.sol.breakdown import (
    DeviceTableError,
    UnknownDeviceError,
    breakdown,
    convention_clock_hz,
    convention_named,
    current_device_name,
    load_table,
    resolve_device,
)


def render(task: Task, device: str, convention: str | None = None) -> str:
    """The benchmark table of a problem on a device; B200 rows carry the published value beside."""
    entry = load_table().devices[resolve_device(device)]
    rules = convention_named(convention)
    results = [breakdown(task, case, entry.key, rules.name) for case in task.benchmarks]
    first = results[0] if results else breakdown(task, task.tests[0], entry.key, rules.name)
    clock_hz = convention_clock_hz(entry, rules)
    clock = (f", tensor rates scaled from {entry.rated_clock_hz / 1e9:.4g} GHz to {clock_hz / 1e9:.4g} GHz"
             if clock_hz and entry.rated_clock_hz and clock_hz != entry.rated_clock_hz else "")
    nominal = " (nominal figures, not measured)" if entry.key == "cpu" else ""
    lines = [
        f"speed of light: {task.name} on {entry.key}{nominal}, {rules.name} convention",
        "  time = max(bytes / bandwidth, flops / math rate)",
        f"  bandwidth {first.bandwidth_bytes_per_s:.4g} B/s = {rules.bandwidth_fraction:.0%} of "
        f"{entry.dram_bytes_per_s:.4g} B/s peak DRAM",
        f"  math rate {first.math_flops_per_s:.4g} FLOP/s: {first.math_note}{clock}",
    ]
    published = task.speed_of_light.published_b200_us if entry.key == "B200" else ()
    header = ["shape", "bytes", "flops", "bound", "SOL us"] + (["published B200 us", "diff"] if published else [])
    rows = [header]
    for index, (case, result) in enumerate(zip(task.benchmarks, results)):
        row = [shape_text(case), f"{result.bytes:,.0f}", f"{result.flops:.4g}", result.bound,
               f"{result.seconds * 1e6:.3f}"]
        if published:
            row += [f"{published[index]:.3f}", f"{100 * (result.seconds * 1e6 / published[index] - 1):+.2f}%"]
        rows.append(row)
    lines += text_table(rows[0], rows[1:])
    if results:
        geomean_us = math.exp(sum(math.log(r.seconds * 1e6) for r in results) / len(results))
        lines.append(f"geometric mean of the SOL: {geomean_us:.3f} us")
    return "\n".join(lines)


def _handle(args: argparse.Namespace) -> int:
    try:
        task = load_task(args.problem)
        device = args.device or current_device_name()
        print(render(task, device, args.convention))
    except (TaskError, UnknownDeviceError, DeviceTableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    return int(ExitCode.PASSED)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("sol", help="speed-of-light table of a problem's benchmarks on a device")
    parser.add_argument("problem", help="problem name (a folder under problems/)")
    parser.add_argument("--device", help="a harness/sol/devices.yml key (B200, 'H100 SXM', cpu, ...) or a torch "
                        "device name; default: this machine's GPU, else cpu")
    parser.add_argument("--convention", help="contest (default: 96%% of DRAM peak, tensor rates at 1.5 GHz) "
                        "or datasheet (the peaks as printed)")
    parser.set_defaults(handler=_handle)
