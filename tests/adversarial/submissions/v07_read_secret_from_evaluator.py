"""Cheat 7: read the secret seed out of the evaluator, the worker's ancestor: its /proc/<pid>/environ
shows the environment it started with, NVFP4_SECRET_SEED included, whatever its os.environ says now
(v07b opens its memory instead). Every process from the worker's parent up to the evaluator
(`python -m harness eval`) is tried: the reaper between them (harness.judge.worker_link.worker_reaper)
too. Raises if the secret is found, so the expected verdict is passed: the evaluator wipes the
variable from that block as it reads it (harness.judge.verdict.seeds), the evaluator and the reaper are
non-dumpable (a worker of the same user cannot open the file), and under a root evaluator the worker
is uid 65534 (a ranked GPU run refuses a worker that would keep root)."""

import _evaluator
import _honest


def _holds_the_secret(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return b"NVFP4_SECRET_SEED" in handle.read()
    except OSError:
        return False


def custom_kernel(data):
    leaks = [f"{pid}'s environ holds NVFP4_SECRET_SEED" for pid in _evaluator.ancestors() if _holds_the_secret(pid)]
    if leaks:
        raise RuntimeError(f"the evaluator's side leaks: {'; '.join(leaks)}")
    return _honest.gemv(data)
