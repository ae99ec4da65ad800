"""``--mode sanitize``: each test shape's call run once under compute-sanitizer, one line per finding.

compute-sanitizer (CUDA toolkit) wraps the worker process, one fresh worker per shape and tool,
so everything in one log belongs to one call: no markers in a shared stream to trust or order.
No kernel of the harness runs beside the submission's there: the worker copies inputs drawn on
the CPU to the device, makes one plain call (no timer, no L2 flush) and copies the outputs back;
the reference and the check run in the parent, which is not under the sanitizer. The caching
allocator is turned off in the worker, so every tensor is its own allocation and an access past
one is seen (inside a pooled block it would not be). See docs/sanitize.md.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.results import CaseResult, Status
from harness.runner import WorkerFailure, WorkerSession
from harness.task import Task, shape_text

if TYPE_CHECKING:
    from harness.evaluate import Evaluation

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
TOOL_CHOICES = (*TOOLS, "all")
SANITIZER_ENV = "NVFP4_COMPUTE_SANITIZER"
CUDA_BIN = Path("/usr/local/cuda/bin")
TIMEOUT_SCALE = 10.0
"""Stage limits are multiplied by this under the sanitizer: instrumented kernels run 10-100x
slower, and the first call's JIT compile falls inside the call's limit."""

PRINT_LIMIT = 100
NEAR_BYTES = 1 << 20
"""An address farther than this from every input is not told relative to one."""

_PREFIX = "========="
_NOT_FINDINGS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "RACECHECK SUMMARY", "Target application")
_CONSEQUENCE = "Program hit"  # a CUDA API error that follows a finding (e.g. the launch failure it caused)


class SanitizerMissing(Exception):
    """compute-sanitizer cannot be run here; the message says where it comes from."""


def tools_for(choice: str) -> tuple[str, ...]:
    return TOOLS if choice == "all" else (choice,)


def find_sanitizer(environ: dict[str, str] | None = None) -> Path:
    """$NVFP4_COMPUTE_SANITIZER, else compute-sanitizer on PATH, else the CUDA toolkit's bin folder."""
    environ = dict(os.environ) if environ is None else environ
    named = environ.get(SANITIZER_ENV)
    if named:
        if Path(named).is_file() and os.access(named, os.X_OK):
            return Path(named)
        raise SanitizerMissing(f"${SANITIZER_ENV}={named} is not an executable file; point it at compute-sanitizer")
    found = shutil.which("compute-sanitizer", path=environ.get("PATH")) or shutil.which(
        "compute-sanitizer", path=str(CUDA_BIN))
    if found:
        return Path(found)
    raise SanitizerMissing(
        "compute-sanitizer not found (on PATH or in /usr/local/cuda/bin): it ships with the CUDA toolkit; "
        f"install the toolkit or set ${SANITIZER_ENV} to its path"
    )


def sanitizer_command(executable: Path, tool: str, log_file: Path) -> list[str]:
    """The prefix that wraps the worker's command line under one tool."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool '{tool}': choose one of {', '.join(TOOL_CHOICES)}")
    command = [
        "env", "PYTORCH_NO_CUDA_MEMORY_CACHING=1",  # one allocation per tensor: out-of-bounds is seen
        str(executable), "--tool", tool,
        "--log-file", str(log_file),
        "--print-limit", str(PRINT_LIMIT),
        "--show-backtrace", "device",  # host frames are the Python interpreter's: noise
    ]
    if tool == "racecheck":
        command += ["--racecheck-report", "all"]  # the hazards' addresses and the analysis' source lines
    return command


# -- the report -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """One error block of a sanitizer report."""

    tool: str
    lines: tuple[str, ...]  # the block, prefix and indentation stripped; lines[0] says what

    @property
    def what(self) -> str:
        head = re.sub(r"\s+at\s+\S.*$", "", self.lines[0]).rstrip(" :")
        head = head.removeprefix("Error: ").removeprefix("(Warning) ").removeprefix("(Error) ")
        follow = next((line for line in self.lines[1:2] if line.startswith("and ")), "")
        if follow:
            hazards = re.search(r"\[(\d+) hazards?\]", follow)
            head += " and " + re.sub(r"\s+at\s+\S.*$", "", follow.removeprefix("and "))
            head += f" ({hazards.group(1)} hazards)" if hazards else ""
        return head

    @property
    def kernel(self) -> str | None:
        for line in self.lines:
            match = re.search(r"\bat (?:0x[0-9a-fA-F]+ in \S+:)?(.+?)\+0x[0-9a-fA-F]+", line)
            if match:
                return match.group(1).strip()
        return None

    @property
    def address(self) -> int | None:
        for line in self.lines:
            match = re.search(r"\b(?:Address|at __global__|Uninitialized access at) (0x[0-9a-fA-F]+)", line)
            if match:
                return int(match.group(1), 16)
        return None

    @property
    def is_consequence(self) -> bool:
        return self.lines[0].startswith(_CONSEQUENCE)


def parse_report(text: str, tool: str) -> list[Finding]:
    """Error blocks of a compute-sanitizer log, in order (summaries and banners left out)."""
    findings: list[Finding] = []
    block: list[str] = []

    def close() -> None:
        if block and not block[0].startswith(_NOT_FINDINGS):
            findings.append(Finding(tool, tuple(block)))
        block.clear()

    for line in text.splitlines():
        if not line.startswith(_PREFIX):
            continue
        body = line[len(_PREFIX):]
        if not body.strip():
            close()
        elif len(body) - len(body.lstrip()) <= 1:
            close()
            block.append(body.strip())
        elif block:
            block.append(body.strip())
    close()
    return findings


def error_count(text: str) -> int | None:
    match = re.search(r"ERROR SUMMARY: (\d+) errors?", text)
    return int(match.group(1)) if match else None


def first_finding(text: str, tool: str) -> Finding | None:
    """The first real finding; a CUDA API error only when nothing else explains it."""
    findings = parse_report(text, tool)
    return next((f for f in findings if not f.is_consequence), findings[0] if findings else None)


# -- where an address lies ---------------------------------------------------------------------
@dataclass(frozen=True)
class Placement:
    """Where one input tensor's storage lies in device memory (reported by the worker)."""

    label: str  # 'c (128,1,1) float16'
    start: int
    nbytes: int

    @property
    def end(self) -> int:
        return self.start + self.nbytes


def input_names(task: Task) -> list[str]:
    """Names of the data tuple's members from the task's contract: 'receives (a, b, ..., c)'."""
    match = re.search(r"receives \(([^)]*)\)", task.data_contract)
    return [name.strip() for name in match.group(1).split(",")] if match else []


def placements(reported: list[dict[str, Any]], names: list[str]) -> list[Placement]:
    """The worker's placements, labelled by name (when the contract's names fit), shape and dtype."""
    result = []
    for entry in reported:
        try:
            index, start, nbytes = int(entry["index"]), int(entry["start"]), int(entry["nbytes"])
            shape = ",".join(str(int(s)) for s in entry.get("shape", []))
        except (KeyError, TypeError, ValueError):
            continue
        name = names[index] if len(names) == len(reported) else f"data[{index}]"
        result.append(Placement(f"{name} ({shape}) {entry.get('dtype', '?')}", start, nbytes))
    return result


def describe_address(address: int, where: list[Placement]) -> str:
    """'12 bytes past the end of c (128,1,1) float16', 'byte 40 of a (...)', or why neither."""
    inside = [p for p in where if p.start <= address < p.end]
    if inside:
        return f"byte {address - inside[0].start} of {inside[0].label} ({inside[0].nbytes} bytes)"
    after = [(address - p.end, p) for p in where if p.end <= address]
    before = [(p.start - address, p) for p in where if p.start > address]
    gap_after, past = min(after, key=lambda pair: pair[0], default=(None, None))
    gap_before, ahead = min(before, key=lambda pair: pair[0], default=(None, None))
    if past is not None and gap_after <= NEAR_BYTES and (gap_before is None or gap_after <= gap_before):
        return (f"right past the end of {past.label}" if gap_after == 0
                else f"{gap_after} bytes past the end of {past.label}")
    if ahead is not None and gap_before <= NEAR_BYTES:
        return f"{gap_before} bytes before the start of {ahead.label}"
    return f"address {address:#x}, not within 1 MiB of any input (an allocation of the submission's own)"


def verdict_line(finding: Finding, where: list[Placement], errors: int | None) -> str:
    """The one line a contestant reads: tool, what, kernel, the address told relative to an input."""
    line = f"{finding.tool}: {finding.what}"
    if finding.kernel:
        line += f" in kernel {finding.kernel}"
    if finding.address is not None:
        line += f", {describe_address(finding.address, where)}"
    if errors and errors > 1:
        line += f" ({errors - 1} more in the report)"
    return line


# -- the run --------------------------------------------------------------------------------------
def _sanitized_call(evaluation: Evaluation, case: dict[str, Any], prefix: list[str]) -> tuple[
        list[dict[str, Any]], WorkerFailure | None]:
    """One worker under the sanitizer: import, draw the inputs, one checked call, a clean exit."""
    limits = evaluation.task.timeouts_s
    reported: list[dict[str, Any]] = []
    with WorkerSession(evaluation.task, evaluation.submission, evaluation.device, evaluation.visible_devices,
                       command_prefix=prefix) as session:
        try:
            session.start()
            reported = session.prepare_inputs({**case, "seed": evaluation.call_seed(case, 0)}, limits["test"])
            evaluation.checked_call(session, case, 0, 0.0, "the call under compute-sanitizer", limits["warmup"])
            failure = None
        except WorkerFailure as error:
            failure = error
        evaluation.stdout_tail = session.output_tail()
    return reported, failure


def run_cases(evaluation: Evaluation, cases: list[tuple[str, dict[str, Any]]], executable: Path,
              tools: tuple[str, ...]) -> Iterator[tuple[CaseResult, str]]:
    """Each case under each tool in turn until one finds something: (result, the raw logs)."""
    names = input_names(evaluation.task)
    with tempfile.TemporaryDirectory(prefix="nvfp4-sanitize-") as folder:
        for position, (kind, case) in enumerate(cases, 1):
            outcome = CaseResult(kind, case, Status.PASSED, f"clean under {', '.join(tools)}")
            logs = []
            for tool in tools:
                log = Path(folder) / f"{position}-{tool}.log"
                reported, failure = _sanitized_call(evaluation, case, sanitizer_command(executable, tool, log))
                text = log.read_text(errors="replace") if log.exists() else "(no log written)\n"
                logs.append(f"#### {kind} {shape_text(case)}: compute-sanitizer --tool {tool}\n{text}")
                finding = first_finding(text, tool)
                if finding is not None:
                    line = verdict_line(finding, placements(reported, names), error_count(text))
                    outcome = CaseResult(kind, case, Status.FAILED, line)
                    break
                if failure is not None:
                    outcome = CaseResult(kind, case, failure.status, f"{failure.reason} (no finding by {tool})")
                    break
            yield outcome, "\n".join(logs)
