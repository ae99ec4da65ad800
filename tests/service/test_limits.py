"""Limits: the pure checks, and the per-user quotas as a live service enforces them."""

from __future__ import annotations

import datetime

import pytest
import requests

from harness.service.limits import (
    Limits,
    Refused,
    check_deadline,
    check_source,
    choose_problem,
    parse_deadline,
    safe_filename,
)

from .conftest import add_user, bearer, wait_done

UTC = datetime.timezone.utc


def test_parse_deadline_reads_iso_times_as_utc():
    assert parse_deadline("nvfp4_gemv=2026-03-01T12:00Z") == ("nvfp4_gemv", datetime.datetime(2026, 3, 1, 12,
                                                                                                tzinfo=UTC))
    assert parse_deadline("nvfp4_gemv=2026-03-01")[1].tzinfo == UTC
    with pytest.raises(ValueError, match="PROBLEM=YYYY"):
        parse_deadline("nvfp4_gemv 2026-03-01")


def test_a_deadline_closes_ranked_runs_only():
    limits = Limits(deadlines={"nvfp4_gemv": datetime.datetime(2026, 1, 1, tzinfo=UTC)})
    after, before = datetime.datetime(2026, 1, 2, tzinfo=UTC), datetime.datetime(2025, 12, 31, tzinfo=UTC)
    with pytest.raises(Refused) as refused:
        check_deadline("nvfp4_gemv", "leaderboard", limits, now=after)
    assert refused.value.status_code == 403
    check_deadline("nvfp4_gemv", "test", limits, now=after)
    check_deadline("nvfp4_gemv", "leaderboard", limits, now=before)
    check_deadline("nvfp4_gemm", "leaderboard", limits, now=after)


def test_the_problem_comes_from_the_field_or_the_popcorn_line():
    text = "#!POPCORN leaderboard nvfp4_gemv\n"
    assert choose_problem(None, text, ["nvfp4_gemv", "nvfp4_gemm"]) == "nvfp4_gemv"
    assert choose_problem("nvfp4_gemv", text, ["nvfp4_gemv", "nvfp4_gemm"]) == "nvfp4_gemv"
    assert choose_problem("nvfp4_gemm", "x = 1\n", ["nvfp4_gemv", "nvfp4_gemm"]) == "nvfp4_gemm"
    with pytest.raises(Refused, match=r"leaderboard nvfp4_gemv' line .* nvfp4_gemm") as refused:
        choose_problem("nvfp4_gemm", text, ["nvfp4_gemv", "nvfp4_gemm"])  # the two must agree
    assert refused.value.status_code == 400
    with pytest.raises(Refused, match="unknown problem"):
        choose_problem(None, "#!POPCORN leaderboard conv\n", ["nvfp4_gemv"])
    final = "#!POPCORN leaderboard final_nvfp4_gemv\n"  # a contest leaderboard's name for the problem
    assert choose_problem(None, final, ["nvfp4_gemv", "nvfp4_gemm"]) == "nvfp4_gemv"
    assert choose_problem("nvfp4_gemv", final, ["nvfp4_gemv", "nvfp4_gemm"]) == "nvfp4_gemv"
    with pytest.raises(Refused, match=r"leaderboard final_nvfp4_gemv' line .* nvfp4_gemm"):
        choose_problem("nvfp4_gemm", final, ["nvfp4_gemv", "nvfp4_gemm"])


def test_source_must_be_utf8_python():
    with pytest.raises(Refused, match="not UTF-8"):
        check_source(b"\xff\xfe", "k.py")
    with pytest.raises(Refused, match="line 2"):
        check_source(b"x = 1\nx = = 2\n", "k.py")


def test_source_too_deep_for_the_parser_is_refused_not_raised():
    """The parser's RecursionError and MemoryError (stack overflow) are a 400, not a 500."""
    for source in (b"a" + b"[0]" * 50000, b"-" * 200000 + b"1"):
        with pytest.raises(Refused) as refused:
            check_source(source, "k.py")
        assert refused.value.status_code == 400 and str(refused.value).startswith("k.py: ")


CRASH = b"#!POPCORN leaderboard nvfp4_gemv\nraise SystemExit(3)\n"  # fails at import: a fast job


def test_a_live_service_enforces_the_per_user_quotas(service_factory):
    server = service_factory("--per-hour", "3", "--max-unfinished", "2")
    rita, sam = add_user(server.db, "rita"), add_user(server.db, "sam")
    server.start()

    def submit(token: str) -> requests.Response:
        return requests.post(f"{server.url}/submissions", headers=bearer(token), data={"mode": "test"},
                             files={"file": ("crash.py", CRASH)}, timeout=30)

    first, second = submit(rita), submit(rita)
    assert first.status_code == second.status_code == 200
    busy = submit(rita)
    assert busy.status_code == 429 and "2 submissions queued or running, the limit is 2" in busy.json()["error"]
    assert submit(sam).status_code == 200  # the limits are per user
    for answer in (first, second):
        assert wait_done(server, rita, answer.json()["id"])["result"]["status"] == "crashed"
    assert submit(rita).status_code == 200
    wait_done(server, sam, 3)
    hourly = submit(rita)
    assert hourly.status_code == 429 and "3 submissions in the last hour, the limit is 3" in hourly.json()["error"]


def test_an_upload_name_becomes_a_plain_file_name():
    assert safe_filename("gemv_v2.py") == "gemv_v2.py"
    assert safe_filename("../../etc/passwd.py") == "passwd.py"
    assert safe_filename("C:\\work\\k.py") == "k.py"
    for odd in ("..", "", None, ".hidden.py", "kernel.cu", "a b.py"):
        assert safe_filename(odd) == "submission.py"
