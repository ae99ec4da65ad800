"""The adversarial suite's one table (verdicts.yml) and how to run a row of it.

Shared by test_adversarial.py (CPU rows, in CI) and run_gpu.py (every row, on a CUDA machine).

A row runs against its problem cut down to the smallest cases that exercise the attack: the
first of the problem's ``cpu_tests`` as the only test, and its first benchmark (a GPU
``benchmark`` run times that one; on the CPU, ``benchmark`` times the test shape). The cut-down
task.yml is written to a scratch folder named like the problem, so the reference, the
speed-of-light figures and the checks are the problem's own. One case keeps a row whose every
call kills the worker to one worker start.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SUBMISSIONS = HERE / "submissions"
VERDICTS = HERE / "verdicts.yml"
if str(REPO) not in sys.path:  # run as a script, or from a checkout that is not pip-installed
    sys.path.insert(0, str(REPO))
PLATFORMS = ("cpu", "gpu")
MODES = ("test", "benchmark", "leaderboard")
SUITE_TIMEOUTS_S = {"import": 60.0, "test": 60.0, "warmup": 60.0, "call": 60.0, "benchmark": 120.0}
"""Stage limits of the cut-down tasks: generous for a loaded 2-core CI machine; the hang rows
lower the one stage they hang in (column timeouts_s), so a hang ends in seconds."""


@dataclass(frozen=True)
class Row:
    file: str
    problem: str
    platform: str
    mode: str
    status: str
    reason: str
    attack: str
    vector: int = 0
    secret: int | None = None
    secret_via: str = "argument"
    timeouts_s: dict[str, float] | None = None
    twin: str | None = None  # an honest file timed alike: this row may not come out more than 3% faster
    known_hole: bool = False  # the attack is expected to work (docs/security.md); reported, not a failure
    supervised: bool = False  # its verdict is the syscall supervisor's: skipped where it cannot run (not root)
    or_reason: str | None = None  # as right as reason: which channel sees a race first, or another platform's call
    sandbox: str | None = None  # NVFP4_SANDBOX for this row (one layer alone); default: the harness's steps

    def accepts(self, status: str, reason: str) -> bool:
        """Whether a run that ended ``status`` for ``reason`` is this row's verdict: its status, with reason
        or or_reason."""
        either = self.reason in reason or (self.or_reason is not None and self.or_reason in reason)
        return status == self.status and either

    @property
    def path(self) -> Path:
        return SUBMISSIONS / self.file


@dataclass
class Observed:
    status: str
    reason: str
    elapsed_s: float
    geomean_us: float | None = None

    @property
    def skipped(self) -> bool:
        return self.status == SKIPPED

    def matches(self, row: Row) -> bool:
        return row.accepts(self.status, self.reason)


SKIPPED = "skipped"


def load_rows(path: Path = VERDICTS) -> list[Row]:
    from harness.contract.results import Status

    rows = [Row(**entry) for entry in yaml.safe_load(path.read_text())["rows"]]
    for row in rows:
        problems = f"{row.file}: "
        if row.platform not in PLATFORMS or row.mode not in MODES:
            raise ValueError(problems + f"platform must be one of {PLATFORMS}, mode one of {MODES}")
        Status(row.status)  # raises for a value that is not a Status
        if not row.path.is_file():
            raise ValueError(problems + "no such file under submissions/")
        if row.secret_via not in ("argument", "env") or (row.secret is None) != (row.mode != "leaderboard"):
            raise ValueError(problems + "leaderboard rows (and only they) need a secret, given by argument or env")
        if set(row.timeouts_s or {}) - set(SUITE_TIMEOUTS_S):
            raise ValueError(problems + f"timeouts_s keys must be among {list(SUITE_TIMEOUTS_S)}")
    return rows


def reduced_problem(problem: str, scratch: Path, timeouts_s: dict[str, float] | None = None) -> Path:
    """A copy of the problem's task folder with one test and one benchmark; returns its path."""
    from harness.contract.task_spec import PROBLEMS_DIR

    source = PROBLEMS_DIR / problem
    spec = yaml.safe_load((source / "task.yml").read_text())
    spec["tests"] = spec["cpu_tests"][:1]
    spec["cpu_tests"] = []
    spec["benchmarks"] = spec["benchmarks"][:1]
    published = spec.get("speed_of_light", {}).get("published_b200_us")
    if published:
        spec["speed_of_light"]["published_b200_us"] = published[:1]
    spec["timeouts_s"] = {**SUITE_TIMEOUTS_S, **(timeouts_s or {})}
    target = scratch / problem
    target.mkdir(parents=True, exist_ok=True)
    (target / "task.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    shutil.copy(source / "task.py", target / "task.py")
    return target


def _pythonpath() -> str:
    return os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def _run_cli(row: Row, problem_dir: Path, device: str, timeout_scale: float) -> Observed:
    """``python -m harness eval`` with what the row puts in the evaluator's environment: the secret
    (the organizer's ranked run) or the sandbox steps (one layer tested without the others)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nvfp4-adversarial-cli-") as scratch:
        out = Path(scratch) / "result.json"
        env = {**os.environ, "PYTHONPATH": _pythonpath()}
        if row.secret is not None and row.secret_via == "env":
            env["NVFP4_SECRET_SEED"] = str(row.secret)
        if row.sandbox is not None:
            env["NVFP4_SANDBOX"] = row.sandbox
        command = [sys.executable, "-m", "harness", "eval", str(problem_dir), str(row.path),
                   "--mode", row.mode, "--device", device, "--timeout-scale", str(timeout_scale),
                   "--json", str(out)]
        run = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        if not out.is_file():
            tail = (run.stderr or run.stdout)[-500:].replace("\n", " | ")
            return Observed("no-result", f"the evaluator exited {run.returncode} without JSON: {tail}",
                            time.perf_counter() - started)
        record = json.loads(out.read_text())
    return Observed(record["status"], record["reason"], time.perf_counter() - started)


def run_row(row: Row, device: str, timeout_scale: float = 1.0) -> Observed:
    """Evaluate one row's submission on ``device`` ('cpu' or 'cuda'); never raises for its verdict."""
    from harness.judge.run import evaluate_submission
    from harness.judge.verdict.modes import MODES
    from harness.judge.verdict.run_options import RunOptions
    from harness.judge.worker_link import supervision
    from harness.worker import landlock

    why_not = supervision.unavailable() if row.supervised else None
    if why_not:
        return Observed(SKIPPED, f"needs the syscall supervisor, which cannot run here: {why_not}", 0.0)
    if row.sandbox and "landlock" in row.sandbox.split(",") and landlock.abi() < 2:
        return Observed(SKIPPED, f"needs Landlock ABI 2, this kernel has {landlock.abi()}", 0.0)
    with tempfile.TemporaryDirectory(prefix="nvfp4-adversarial-") as scratch:
        os.chmod(scratch, 0o755)  # readable by the workers (uid 65534 under a root evaluator)
        problem_dir = reduced_problem(row.problem, Path(scratch), row.timeouts_s)
        if (row.secret is not None and row.secret_via == "env") or row.sandbox is not None:
            return _run_cli(row, problem_dir, device, timeout_scale)
        started = time.perf_counter()
        result = evaluate_submission(str(problem_dir), row.path, MODES[row.mode], device,
                                     RunOptions(secret_seed=row.secret, timeout_scale=timeout_scale))
        return Observed(result.status.value, result.reason, time.perf_counter() - started, result.geomean_us)


TWIN_TOLERANCE = 0.03
"""A passed attack row may be at most this much faster than its honest twin (timing noise)."""


def faster_than_twin(row: Row, observed: dict[str, Observed]) -> str | None:
    """Why a passed row's time gives the attack away (faster than its honest twin), or None."""
    got, twin = observed.get(row.file), observed.get(row.twin or "")
    if row.known_hole or not row.twin or got is None or twin is None or got.status != "passed" or not twin.geomean_us:
        return None
    if got.geomean_us is None or got.geomean_us < (1 - TWIN_TOLERANCE) * twin.geomean_us:
        return f"{got.geomean_us} us against its honest twin's {twin.geomean_us:.2f} us"
    return None


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: list[Row], observed: dict[str, Observed] | None = None) -> str:
    """The verdict table as markdown; with ``observed``, two more columns: what a run gave."""
    head = ["#", "submission", "problem", "platform", "mode", "expected", "reason contains", "attack"]
    if observed is not None:
        head += ["observed", "ok"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        reason = f"`{row.reason}`" + (f" or `{row.or_reason}`" if row.or_reason else "") if row.reason else ""
        cells = [str(row.vector or "fault"), f"`{row.file}`", row.problem, row.platform,
                 row.mode + (f" (secret via {row.secret_via})" if row.secret is not None else ""),
                 row.status, reason, row.attack]
        if observed is not None:
            seen = observed.get(row.file)
            cells += [f"{seen.status}: {seen.reason[:90]}" if seen else "not run",
                      ("yes" if seen.matches(row) else "**NO**") if seen else ""]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def as_json(rows: list[Row], observed: dict[str, Observed], device: dict[str, Any]) -> dict[str, Any]:
    return {
        "device": device,
        "rows": [
            {**row.__dict__, "observed": observed[row.file].__dict__ if row.file in observed else None,
             "ok": observed[row.file].matches(row) if row.file in observed else None}
            for row in rows
        ],
    }


if __name__ == "__main__":  # python tests/adversarial/adversarial_suite.py: print the table for docs/security.md
    print(markdown_table(load_rows()))
