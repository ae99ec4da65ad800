"""Sanitize mode on a CUDA machine: each planted defect found by its tool, the baselines clean.

    python tests/sanitize/run_gpu.py OUT_DIR [--shapes N] [--budget-s S]

Runs ``evaluate_submission`` in sanitize mode on a copy of each problem narrowed to its
first N test shapes (the full check is ``python -m harness eval P FILE --mode sanitize``; one
sanitized worker per shape costs seconds, and the device time of a check is short). Writes the
verdict of every run to OUT_DIR/summary.txt and the raw compute-sanitizer reports beside it
(these become tests/data/sanitizer/ fixtures). Exit 1 when a defect is missed or a baseline is
not clean.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harness.contract.results import Status  # noqa: E402
from harness.contract.task_spec import PROBLEMS_DIR  # noqa: E402
from harness.judge.run import evaluate_submission  # noqa: E402
from harness.judge.verdict.modes import MODES  # noqa: E402
from harness.judge.verdict.run_options import RunOptions  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFECTS = (  # (file, tool that must find it, words its line must hold)
    ("oob_write.py", "memcheck", "12 bytes past the end of c"),
    ("shared_race.py", "racecheck", "shared_race"),
    ("uninit_read.py", "initcheck", "read_unwritten"),
    ("divergent_barrier.py", "synccheck", "divergent_barrier"),
)
BASELINES = ("triton_gemv.py", "triton_gemm.py", "triton_dual_gemm.py", "triton_group_gemm.py", "torch_reference.py")


def narrowed_problem(problem: str, shapes: int, folder: Path) -> Path:
    """A copy of the problem folder whose task.yml keeps only its first ``shapes`` test shapes."""
    target = folder / problem
    if not target.exists():
        shutil.copytree(PROBLEMS_DIR / problem, target)
        spec = yaml.safe_load((target / "task.yml").read_text())
        spec["tests"] = spec["tests"][:shapes]
        (target / "task.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return target


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--shapes", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=300.0, help="start no run after this many seconds")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    runs = [(HERE / name, "nvfp4_gemv", tool, words, f"defect_{Path(name).stem}") for name, tool, words in DEFECTS]
    runs.append((REPO / "submissions/nvfp4_gemv/triton_gemv.py", "nvfp4_gemv", "all", None, "clean_all_tools"))
    runs += [(path, path.parent.name, "memcheck", None, "baselines_memcheck")
             for path in sorted((REPO / "submissions").glob("*/*.py")) if path.name in BASELINES]
    started, lines, failures = time.perf_counter(), [], 0
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o755)  # the narrowed problems' task.py: a root evaluator's workers are uid 65534
        for path, problem, tool, words, log_name in runs:
            if time.perf_counter() - started > args.budget_s:
                lines.append(f"SKIPPED (budget) {path.relative_to(REPO)} {tool}")
                continue
            one = time.perf_counter()
            report = args.out / f"{log_name}.{path.stem}.tmp"
            result = evaluate_submission(str(narrowed_problem(problem, args.shapes, Path(folder))), path,
                                         mode=MODES["sanitize"], device="cuda",
                                         options=RunOptions(sanitizer_tool=tool, sanitizer_report=report),
                                         progress=print)
            with (args.out / f"{log_name}.log").open("a") as log:
                log.write(f"###### {path.relative_to(REPO)} --tool {tool}\n{report.read_text()}\n")
            report.unlink()
            expected = (words is None and result.status == Status.PASSED) or (
                words is not None and result.status == Status.FAILED and words in result.reason)
            failures += not expected
            lines.append(f"{'ok  ' if expected else 'BAD '} {path.relative_to(REPO)} --tool {tool}: "
                         f"{result.status.value} exit {int(result.exit_code)} in {time.perf_counter() - one:.1f} s: "
                         + " | ".join(f"{c.case} {c.status.value}: {c.reason}" for c in result.cases)
                         + (f" | run: {result.reason}" if not result.cases else ""))
            print(lines[-1], flush=True)
    (args.out / "summary.txt").write_text("\n".join(lines) + f"\nfailures: {failures}\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
