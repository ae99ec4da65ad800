"""Each GPU's medians against its peers' (stand-in results): the flag, the pages, and where the
runner places the check file's copies."""

from __future__ import annotations

import json

from harness.execution.eval_job import EvalJob
from harness.leaderboard import gpu_agreement, ledger, render, runner
from harness.leaderboard.gpu_agreement import assess
from harness.leaderboard.rank import build_board, with_run_state
from harness.leaderboard.store import Store

from .samples import B200, make_run, stored

BASE = (20.0, 40.0, 10.0)


def on_gpu(uuid: str, scale: float = 1.0, worker: str = ""):
    run = make_run(tuple(m * scale for m in BASE))
    run.device = {**run.device, "uuid": uuid, "host": "h", "worker": worker or uuid}
    return run


def test_a_gpu_off_its_peers_by_more_than_the_tolerance_is_flagged():
    readings = {r.gpu: r for r in assess([on_gpu("GPU-a"), on_gpu("GPU-b", 1.005), on_gpu("GPU-c", 1.03)])}
    assert [readings[g].flagged for g in ("GPU-a", "GPU-b", "GPU-c")] == [False, False, True]
    assert abs(readings["GPU-c"].off_pct - 100 * (1.03 / 1.0025 - 1)) < 1e-6  # the peers' median: (1 + 1.005) / 2
    assert readings["GPU-c"].check == "nvfp4_gemv/a.py"
    assert not any(r.flagged for r in assess([on_gpu("GPU-a"), on_gpu("GPU-c", 1.03)], tolerance_pct=5.0))


def test_two_gpus_apart_are_both_flagged_and_one_gpu_has_no_peer():
    assert [r.flagged for r in assess([on_gpu("GPU-a"), on_gpu("GPU-b", 1.025)])] == [True, True]
    assert [r.flagged for r in assess([on_gpu("GPU-a"), on_gpu("GPU-b", 1.015)])] == [False, False]
    [alone] = assess([on_gpu("GPU-a"), on_gpu("GPU-a", 1.5)])  # a second sample of one GPU does not count
    assert alone.ratio is None and not alone.flagged
    cpu = make_run((5.0, 5.0, 5.0), device_type="cpu")
    cpu.cases = [c for c in cpu.cases if c.kind == "test"]  # a CPU ranked run times nothing
    assert assess([cpu, cpu]) == []


def test_the_pages_flag_the_gpu_and_name_the_files_timed_on_it():
    entries = [stored(on_gpu("GPU-slow", 1.03, "gpu1"), run_id=1, author="ada", file="a.py"),
               stored(on_gpu("GPU-fast", 1.0, "gpu0"), run_id=2, author="bob", file="b.py")]
    readings = assess([on_gpu("GPU-fast", 1.0, "gpu0"), on_gpu("GPU-slow", 1.03, "gpu1"),
                       on_gpu("GPU-mid", 1.0, "gpu2")])
    board = with_run_state(build_board("nvfp4_gemv", entries, B200), [], readings)
    page = json.loads(json.dumps(render.board_json(board, "now")))
    flagged = [g for g in page["gpu_agreement"] if g["flagged"]]
    assert [g["gpu"] for g in flagged] == ["GPU-slow"] and page["gpu_tolerance_pct"] == 2.0
    assert page["ranking"][0]["gpu"] == "GPU-fast"
    markdown = render.render_markdown(board, "now")
    row = next(line for line in markdown.splitlines() if "GPU-slow"[4:] in line or "gpu1" in line)
    assert "**FLAGGED**" in row and "a.py" in row
    html = render.render_html(board, "now")
    assert "GPU agreement" in html and "flagged: more than 2% off its peers" in html
    assert "GPU(s) flagged" in render.render_index([board], "now")


class Instant:
    """A stand-in executor of three workers: each job answers at once, timed on its worker's GPU
    (a job naming no worker lands on gpu0)."""

    def __init__(self, workers=("gpu0", "gpu1", "gpu2")) -> None:
        self._workers, self.submitted, self._done = list(workers), [], []

    def workers(self) -> list[str]:
        return self._workers

    def slots(self) -> int:
        return len(self._workers)

    def submit(self, job: EvalJob) -> None:
        self.submitted.append(job)
        worker = job.worker or "gpu0"
        self._done.append((job, on_gpu(f"GPU-{worker}", 1.03 if worker == "gpu2" else 1.0, worker)))

    def completed(self, timeout_s=None):
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        pass


def test_the_runner_times_the_check_file_once_on_every_worker(tmp_path):
    folder = tmp_path / "submissions" / "nvfp4_gemv"
    folder.mkdir(parents=True)
    for name in ("a.py", "b.py"):
        (folder / name).write_text(f"def custom_kernel(data):\n    return '{name}'\n")
    subs = runner.discover(tmp_path / "submissions", ["nvfp4_gemv"])
    with Store.open(tmp_path / "lb.db") as store:
        ledger_run, _ = ledger.begin(store.connection, runner.scope_of(subs, B200, force=False))
        executor = Instant()
        runner.run_all(subs, store, device="cuda", device_name=B200, executor=executor, progress=print,
                       ledger_run=ledger_run, gpu_check=subs[0])
        placed = [(job.filename, job.worker) for job in executor.submitted]
        assert placed[:3] == [("a.py", "gpu0"), ("a.py", "gpu1"), ("a.py", "gpu2")]  # first: one per worker
        assert placed[3:] == [("b.py", None)] and len(store.runs()) == 2  # the copies are no entries
        readings = assess(ledger.gpu_samples(store.connection, ledger_run))
        assert [(r.gpu, r.flagged) for r in readings] == [("GPU-gpu0", False), ("GPU-gpu1", False),
                                                          ("GPU-gpu2", True)]
        again = Instant()  # the same leaderboard run resumed: every sample is there already
        ledger.finish(store.connection, ledger_run, interrupted=True)
        runner.run_all(subs, store, device="cuda", device_name=B200, executor=again, progress=print,
                       ledger_run=ledger_run, gpu_check=subs[0])
        assert again.submitted == [] and len(ledger.gpu_samples(store.connection, ledger_run)) == 3
    assert gpu_agreement.AGREEMENT_TOLERANCE_PCT == 2.0
