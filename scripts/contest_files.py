"""Gather public contest files into a folder that scripts/contest_verdicts.py runs (gpu_check.sh `contest`).

Every .py file at a repository's commit whose '#!POPCORN leaderboard' line names one of this
harness's problems, by the same rule `harness eval` reads that line with (a contest leaderboard's
name such as 'final_nvfp4_dual_gemm' names nvfp4_dual_gemm), is written to
FOLDER/<problem>/<repository>__<path with '/' as '__'>.py; a content seen before is skipped.
The files are contestants' code: keep FOLDER out of git (.contest/ is ignored).

    python3 scripts/contest_files.py FOLDER REPO[@COMMIT] ...

REPO is a git directory (a clone, or a bare mirror as `fetch` leaves one); COMMIT defaults to HEAD.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.contract.submission_file import directives, leaderboard_problem
from harness.contract.task_spec import contest_problems


def git(repository: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repository), *args], capture_output=True, check=True).stdout


def marked_files(repository: Path, commit: str) -> list[str]:
    """The .py files at ``commit`` with a '#!POPCORN' line (git grep: no file is read twice)."""
    found = subprocess.run(["git", "-C", str(repository), "grep", "-l", "-i", "-E", r"^#!POPCORN[[:space:]]",
                            commit, "--", "*.py"], capture_output=True, text=True)
    if found.returncode not in (0, 1):  # 1: no match
        raise subprocess.CalledProcessError(found.returncode, found.args, found.stdout, found.stderr)
    return [line.split(":", 1)[1] for line in found.stdout.splitlines()]


def named_problem(source: bytes, problems: list[str]) -> str | None:
    """The problem a file's leaderboard line names, or None (no line, or another contest's problem)."""
    problem = leaderboard_problem(directives(source.decode("utf-8", "replace")).get("leaderboard"), problems)
    return problem if problem in problems else None


def gather(folder: Path, sources: list[str]) -> dict[str, int]:
    """Write every matching file of each REPO[@COMMIT]; returns the count per problem."""
    problems, seen, counts = contest_problems(), set(), {}
    for spec in sources:
        location, _, commit = spec.partition("@")
        repository = Path(location)
        label = next(part for part in reversed(repository.resolve().parts) if part not in ("repo", ".git"))
        label = label.removesuffix(".git")  # a mirror's folder 'owner+name/repo' is labelled 'owner+name'
        for path in marked_files(repository, commit or "HEAD"):
            source = git(repository, "show", f"{commit or 'HEAD'}:{path}")
            problem = named_problem(source, problems)
            digest = hashlib.sha256(source).hexdigest()
            if problem is None or digest in seen:
                continue
            seen.add(digest)
            target = folder / problem / f"{label}__{path.replace('/', '__')}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source)
            counts[problem] = counts.get(problem, 0) + 1
    return counts


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    counts = gather(Path(argv[0]), argv[1:])
    print(f"{sum(counts.values())} files: " + ", ".join(f"{p} {n}" for p, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
