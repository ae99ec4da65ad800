"""The job table: positions, one transition at a time, restarts."""

from __future__ import annotations

from harness.service import jobs
from harness.service.db import ServiceDb
from harness.service.users import add_user, authenticate


def test_positions_follow_the_queue_and_a_result_is_written_once(tmp_path):
    db = ServiceDb.open(tmp_path / "service.db")
    connection = db.connection
    user = authenticate(connection, add_user(connection, "ada"))
    ids = [jobs.enqueue(connection, user_id=user.id, problem="nvfp4_gemv", mode="test", filename="k.py",
                        source=b"x = 1\n") for _ in range(3)]
    assert [jobs.queue_position(connection, jobs.get(connection, i)) for i in ids] == [1, 2, 3]
    started = jobs.take_next(connection)
    assert (started.id, started.status, started.attempts) == (ids[0], "running", 1)
    assert [jobs.queue_position(connection, jobs.get(connection, i)) for i in ids] == [None, 1, 2]
    assert jobs.count_unfinished(connection, user.id) == 3 and jobs.count_since(connection, user.id, 1) == 3
    assert jobs.finish(connection, ids[0], {"status": "passed"})
    assert not jobs.finish(connection, ids[0], {"status": "failed"})
    assert not jobs.finish(connection, ids[1], {"status": "passed"})  # never started: no result
    assert jobs.get(connection, ids[0]).result == {"status": "passed"}
    jobs.take_next(connection)
    assert jobs.requeue_running(connection) == 1
    assert jobs.get(connection, ids[1]).status == "queued"
    db.close()
