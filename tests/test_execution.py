"""run_job: the one execution path every service, leaderboard and cluster job goes through."""

from harness.contract.results import RunResult, Status
from harness.execution.eval_job import EvalJob, run_job
from harness.judge import run
from harness.judge.worker_link import worker_confinement


def test_the_job_file_is_readable_by_the_workers_unprivileged_uid(monkeypatch):
    """The worker drops to uid 65534 only where that uid can read the file
    (harness.judge.worker_link.worker_process): a private (0700) job folder kept every service and
    leaderboard worker at the evaluator's uid, root on GPU hosts."""
    seen = {}

    def fake_evaluate(problem, path, **options):
        seen["readable"] = worker_confinement.readable_by_others(path)
        seen["listable"] = bool(path.parent.stat().st_mode & 0o004)
        return RunResult(problem=problem, submission_path=str(path), submission_sha256="", mode="test",
                         device={"type": "cpu"}, harness_version="t", status=Status.PASSED)

    monkeypatch.setattr(run, "evaluate_submission", fake_evaluate)
    result = run_job(EvalJob(key="1", problem="nvfp4_gemv", filename="mine.py", source=b"x = 1\n", mode="test"))
    assert result.status == Status.PASSED and result.submission_path == "mine.py"
    assert seen == {"readable": True, "listable": False}
