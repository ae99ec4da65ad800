"""Issue 33's cold starts on a GPU: `make install`'s warm step, `make eval` of the Triton GEMV twice, then a
leaderboard on one GPU.

The install step (`python -m harness.warm`, timed apart) compiles the harness's own kernels into a fresh
cache of the parent's, as on a fresh machine after `make install`. The first `make eval` then starts with
empty compile caches of the submission, the second finds the first one's (the
cache root is fresh for this script, searchable by the workers' uid 65534; the parent's own Triton
cache, its input draws' and reference's kernels, is fresh too, as on a fresh machine: run 14's
first run found it filled by the throughput step before it). Each is timed whole (the process's
wall) beside the run's own breakdown (`wall_s`: its `worker_head_start` is how long the worker had
been starting beside the parent's imports), and beside the Triton kernels it compiled: each kernel
whose cache entry (`<kernel>.json`) the run wrote, the worker's and the parent's apart. A kernel
the second run compiled again is one its kept cache did not serve (run 14: the kept cache saved
nothing measurable, cause not found). Then `harness leaderboard` ranks the
files under LEADERBOARD_SUBMISSIONS (default: issue 33's eight files, two copies of each NVFP4 Triton
baseline, as scripts/cluster_scaling.sh makes them) with a fresh store and a fresh cache root: its
wall time, and each file's breakdown from the store's results (the second and later
files' workers come off the blank-worker shelf). Writes OUT_DIR/coldstart.json.

    python3 scripts/coldstart.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GEMV = "submissions/nvfp4_gemv/triton_gemv.py"
LIMIT_S = 560


def cache_root() -> Path:
    """A fresh compile-cache root the workers (uid 65534 under root) can reach."""
    folder = Path(tempfile.mkdtemp(prefix="nvfp4-coldstart-"))
    folder.chmod(0o711)
    return folder / "compile"


def timed(command: list[str], log: Path, env: dict[str, str]) -> tuple[int, float]:
    started = time.perf_counter()
    with log.open("w") as handle:
        try:
            code = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env, timeout=LIMIT_S).returncode
        except subprocess.TimeoutExpired:
            code = -9
    return code, round(time.perf_counter() - started, 2)


def compiled_kernels(folder: Path, since: float) -> list[str]:
    """What Triton compiled under ``folder`` after ``since`` (a wall clock): each kernel by its name
    (one ``<kernel>.json`` per compiled kernel) and each launcher or utility module it built with the
    C compiler (``.so``, named by its file)."""
    if not folder.is_dir():
        return []
    fresh = [path for path in folder.rglob("*") if path.suffix in (".json", ".so") and path.stat().st_mtime >= since]
    return sorted(path.stem if path.suffix == ".json" else path.name for path in fresh
                  if not path.name.startswith("__grp__"))


def house_twice(out: Path) -> list[dict[str, object]]:
    root = cache_root()
    parent_cache = root.parent / "parent-triton"  # the evaluator's own Triton cache, as fresh as the workers'
    env = {**os.environ, "NVFP4_COMPILE_CACHE": str(root), "TRITON_CACHE_DIR": str(parent_cache)}
    # What `make install` does after pip on a fresh machine (harness/warm.py): the harness's own kernels into
    # that fresh cache, timed apart; the first `make eval` after it compiles only the submission's.
    since = time.time() - 1
    code, wall = timed([sys.executable, "-m", "harness.warm"], out / "house_install.log", env)
    rows = [{"run": "install", "exit_code": code, "process_wall_s": wall,
             "parent_compiled": compiled_kernels(parent_cache, since)}]
    print(json.dumps(rows[-1]), flush=True)
    for run in ("cold", "warm"):
        record = out / f"house_{run}.json"
        since = time.time() - 1  # a file system's mtime may round down
        code, wall = timed(["make", "eval", f"SUBMISSION={GEMV}", f"JSON={record}"], out / f"house_{run}.log", env)
        result = json.loads(record.read_text()) if record.is_file() else {}
        medians = [round(c["timing"]["median_us"], 2) for c in result.get("cases", []) if c.get("timing")]
        rows.append({"run": run, "exit_code": code, "process_wall_s": wall, "wall_s": result.get("wall_s"),
                     "median_us": medians, "worker_compiled": compiled_kernels(root, since),
                     "parent_compiled": compiled_kernels(parent_cache, since)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def eight_files() -> Path:
    """Two copies of each NVFP4 Triton baseline, each copy a distinct file (its own entry), in a folder
    the workers' uid can read."""
    folder = Path(tempfile.mkdtemp(prefix="nvfp4-eight-"))
    for problem in ("nvfp4_gemv", "nvfp4_gemm", "nvfp4_dual_gemm", "nvfp4_group_gemm"):
        for source in sorted(Path("submissions", problem).glob("triton_*.py")):
            (folder / problem).mkdir(exist_ok=True)
            for copy in (1, 2):
                text = source.read_text() + f"# copy {copy} for the cold-start run\n"
                (folder / problem / f"{source.stem}_{copy}.py").write_text(text)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def leaderboard(out: Path) -> dict[str, object]:
    env = {**os.environ, "NVFP4_COMPILE_CACHE": str(cache_root())}
    secret = out / "secret"
    secret.touch(mode=0o600)
    secret.write_text(str(secrets.randbits(62)))
    db = out / "leaderboard.db"
    files = os.environ.get("LEADERBOARD_SUBMISSIONS") or str(eight_files())
    command = [sys.executable, "-m", "harness", "leaderboard", "--db", str(db), "--out", str(out / "pages"),
               "--submissions", files, "--device", "cuda",
               "--gpu-check", "none", "--secret-seed-file", str(secret)]
    code, wall = timed(command, out / "leaderboard.log", env)
    secret.unlink()
    files = []
    if db.is_file():
        with sqlite3.connect(db) as connection:
            for (text,) in connection.execute("SELECT result_json FROM runs ORDER BY id"):
                result = json.loads(text)
                files.append({"file": result.get("submission_path"), "status": result.get("status"),
                              "elapsed_s": result.get("elapsed_s"), "wall_s": result.get("wall_s")})
    row = {"exit_code": code, "process_wall_s": wall, "files": files}
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    report = {"house": house_twice(out), "leaderboard": leaderboard(out)}
    (out / "coldstart.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
