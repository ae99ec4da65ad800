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
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.contract.results import CaseResult, Status
from harness.contract.task_spec import Task, shape_text
from harness.display import report
from harness.judge.worker_link import worker_confinement, worker_spawn
from harness.judge.worker_link.worker_channel import WorkerFailure

if TYPE_CHECKING:
    from harness.judge.verdict.evaluation import Evaluation

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
TOOL_CHOICES = (*TOOLS, "all")
SANITIZER_ENV = "NVFP4_COMPUTE_SANITIZER"
CUDA_BIN = Path("/usr/local/cuda/bin")
TIMEOUT_SCALE = 10.0
"""Stage limits are multiplied by this under the sanitizer: instrumented kernels run 10-100x
slower, and the first call's JIT compile falls inside the call's limit."""

PRINT_LIMIT = 100
PADDING_BYTES = 1024
"""memcheck pads every allocation by this much, so a write past one tensor that would land in
the next (valid memory to the hardware) is still reported."""

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
        "needs compute-sanitizer: not found on PATH or in /usr/local/cuda/bin; it ships with the CUDA toolkit: "
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
    if tool == "memcheck":
        command += ["--padding", str(PADDING_BYTES)]
    if tool == "racecheck":
        command += ["--racecheck-report", "all"]  # the hazards' addresses and the analysis' source lines
    return command


# -- the report -----------------------------------------------------------------------------------
_HEX = r"(0x[0-9a-fA-F]+)"


def _number(text: str) -> int:
    """A count as the sanitizer prints it: '9,728'."""
    return int(text.replace(",", ""))


@dataclass(frozen=True)
class Finding:
    """One error block of a sanitizer report (formats of compute-sanitizer 2025.3, CUDA 13.0)."""

    tool: str
    lines: tuple[str, ...]  # the block, prefix and indentation stripped; lines[0] says what

    def _search(self, pattern: str) -> re.Match[str] | None:
        return next((m for m in (re.search(pattern, line) for line in self.lines) if m), None)

    @property
    def what(self) -> str:
        """'Invalid __global__ write of size 2 bytes', 'Potential RAW hazard detected'."""
        head = re.sub(r"\s+at\s+\S.*$", "", self.lines[0]).rstrip(" :.")
        return re.sub(r"^(Error|Warning|\(Error\)|\(Warning\)):?\s+", "", head)

    @property
    def kernel(self) -> str | None:
        match = self._search(r"\bat (.+?)\+0x[0-9a-fA-F]+")
        return match.group(1).strip() if match else None

    @property
    def address(self) -> int | None:
        match = self._search(rf"\b(?:Address|Access to|Uninitialized access at) {_HEX}")
        return int(match.group(1), 16) if match else None

    @property
    def allocation(self) -> tuple[int, int] | None:
        """(start, bytes) of the allocation memcheck says the address is nearest to."""
        match = self._search(rf"nearest allocation at {_HEX} of size ([\d,]+) bytes")
        return (int(match.group(1), 16), _number(match.group(2))) if match else None

    @property
    def threads(self) -> str:
        """Who: 'thread (0,0,0) in block (0,0,0)', or a hazard's two accesses."""
        match = self._search(r"by thread (\(\S+\) in block \(\S+\))")
        if match:
            return f"thread {match.group(1)}"
        accesses = [line for line in self.lines if re.match(r"(Read|Write|Atomic)\w* Thread", line)]
        return " and ".join(accesses)

    @property
    def shared(self) -> str | None:
        match = self._search(rf"at __shared__ {_HEX}(?: in block (\(\S+\)))?")
        return f"__shared__ {match.group(1)}" + (f" in block {match.group(2)}" if match.group(2) else "") if (
            match) else None

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
    """Errors the sanitizer counted (more than it printed when --print-limit was reached)."""
    match = re.search(r"ERROR SUMMARY: ([\d,]+) errors?", text) or re.search(
        r"RACECHECK SUMMARY: .*\(([\d,]+) errors?", text)
    return _number(match.group(1)) if match else None


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


def describe_address(address: int, where: list[Placement], allocation: tuple[int, int] | None = None) -> str:
    """'12 bytes past the end of c (128,1,1) float16', 'byte 40 of a (...)', or whose memory it is.

    Inputs are told apart by address; past an allocation, by the allocation memcheck names (every
    tensor is its own allocation under the sanitizer, see ``sanitizer_command``).
    """
    inside = next((p for p in where if p.start <= address < p.end), None)
    if inside:
        return f"byte {address - inside.start} of {inside.label} ({inside.nbytes} bytes)"
    if allocation is None:
        return f"address {address:#x}, in none of the inputs (memory the submission allocated)"
    start, size = allocation
    owner = next((p.label for p in where if p.start == start), None)
    name = owner or f"an allocation of {size} bytes at {start:#x}, none of the inputs (the submission's own)"
    if address >= start + size:
        gap = address - start - size
        return f"right past the end of {name}" if gap == 0 else f"{gap} bytes past the end of {name}"
    return f"{start - address} bytes before the start of {name}"


def verdict_line(finding: Finding, where: list[Placement], errors: int | None) -> str:
    """The one line a contestant reads: tool, what, kernel, who, and where (relative to an input)."""
    parts = [f"{finding.tool}: {finding.what}"]
    if finding.kernel:
        parts[0] += f" in kernel {finding.kernel}"
    if finding.threads:
        parts.append(finding.threads)
    if finding.shared:
        parts.append(finding.shared)
    elif finding.address is not None:
        parts.append(describe_address(finding.address, where, finding.allocation))
    line = ", ".join(parts)
    return line + (f" ({errors} errors in the report)" if errors and errors > 1 else "")


# -- the run --------------------------------------------------------------------------------------
def _sanitized_call(evaluation: Evaluation, case: dict[str, Any], prefix: list[str]) -> tuple[
        list[dict[str, Any]], WorkerFailure | None]:
    """One worker under the sanitizer: import, draw the inputs, one checked call, a clean exit."""
    limits = evaluation.task.timeouts_s
    checker = evaluation.checker
    reported: list[dict[str, Any]] = []
    # No compiled core: its graph-based start fails under compute-sanitizer (H100, 2026-11-26: "overhead
    # measurement failed (1: invalid argument)"), and a sanitized call is plain (no timer, no seal) anyway.
    with evaluation.session(command_prefix=prefix, unsealed=True) as session:
        try:
            session.start()
            # The evaluation's own seed and checked call: the same inputs, reference and check as a test.
            reported = session.prepare_inputs({**case, "seed": checker.call_seed(case, 0)}, limits["test"])
            checker.checked_call(session, case, 0, 0.0, "the call under compute-sanitizer", limits["warmup"])
            failure = None
        except WorkerFailure as error:
            failure = error
    return reported, failure


def hand_to_workers(folder: Path) -> None:
    """Let compute-sanitizer write its logs in ``folder``: it runs as the worker's user, and a root
    evaluator's workers (uid 65534) cannot enter root's 0700 folders; every case then came back
    "(no log written)" with no finding (H100, 2026-11-27). The evaluator reads them with ``read_log``."""
    if worker_spawn.workers_run_unprivileged():
        os.chown(folder, worker_confinement.UNPRIVILEGED_UID, -1)


def read_log(path: Path) -> str:
    """A log's text, never through a link and only from a plain file: the folder is the worker's, so a
    submission could put a link to one of the evaluator's files where its log should be."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "(no log written)\n"
    with os.fdopen(descriptor, "rb") as log:
        if not stat.S_ISREG(os.fstat(log.fileno()).st_mode):
            return "(no log written: not a plain file)\n"
        text = log.read().decode(errors="replace")
    return text or "(no log written)\n"


def run_cases(evaluation: Evaluation, cases: list[tuple[str, dict[str, Any]]], executable: Path,
              tools: tuple[str, ...]) -> Iterator[tuple[CaseResult, str]]:
    """Each case under each tool in turn until one finds something: (result, the raw logs)."""
    names = input_names(evaluation.task)
    with tempfile.TemporaryDirectory(prefix="nvfp4-sanitize-") as folder:
        hand_to_workers(Path(folder))
        for position, (kind, case) in enumerate(cases, 1):
            outcome = CaseResult(kind, case, Status.PASSED, f"clean under {', '.join(tools)}")
            logs = []
            for tool in tools:
                log = Path(folder) / f"{position}-{tool}.log"
                reported, failure = _sanitized_call(evaluation, case, sanitizer_command(executable, tool, log))
                text = read_log(log)
                where = placements(reported, names)
                inputs = "; ".join(f"{p.label} at {p.start:#x} ({p.nbytes} bytes)" for p in where)
                logs.append(f"#### {kind} {shape_text(case)}: compute-sanitizer --tool {tool}\n"
                            f"#### inputs: {inputs or 'not reported'}\n{text}")
                finding = first_finding(text, tool)
                if finding is not None:
                    line = verdict_line(finding, where, error_count(text))
                    outcome = CaseResult(kind, case, Status.FAILED, line)
                    break
                if failure is not None:
                    outcome = CaseResult(kind, case, failure.status, f"{failure.reason} (no finding by {tool})",
                                         traceback=failure.traceback or None)
                    break
            yield outcome, "\n".join(logs)


def run(evaluation: Evaluation, cases: list[tuple[str, dict[str, Any]]], executable: Path,
        tools: tuple[str, ...]) -> tuple[list[CaseResult], str]:
    """Sanitize mode for one submission: every case under the tools, each reported as it ends;
    returns the results and every raw report (saved beside --json)."""
    results, logs = [], []
    for outcome, log in run_cases(evaluation, cases, executable, tools):
        results.append(outcome)
        logs.append(log)
        evaluation.progress.step(f"[{len(results)}/{len(cases)}] sanitize {shape_text(outcome.case)}: "
                                 f"{report.case_summary(outcome)}")
    return results, "\n".join(logs)
