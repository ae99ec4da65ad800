"""What an upload must pass before it is queued: each check refuses with an HTTP status and one line."""

from __future__ import annotations

import datetime
import re
import sqlite3
from dataclasses import dataclass, field

from harness.contract.submission_file import SubmissionFileError, agreed_problem, directives, parse_source
from harness.judge.verdict.modes import MODES, SERVICE_MODES
from harness.service import jobs

SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.py$")


class Refused(Exception):
    """A request the service turns down; ``str()`` is the one line the client shows."""

    def __init__(self, status_code: int, line: str) -> None:
        super().__init__(line)
        self.status_code = status_code


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 256 * 1024
    per_hour: int = 30  # submissions per user in any sliding hour
    max_unfinished: int = 2  # queued + running jobs per user
    deadlines: dict[str, datetime.datetime] = field(default_factory=dict)  # problem -> UTC; ranked runs refused after


def parse_deadline(text: str) -> tuple[str, datetime.datetime]:
    """'PROBLEM=2026-03-01T00:00:00Z' -> (problem, aware datetime; a naive time is UTC)."""
    problem, sep, when = text.partition("=")
    try:
        if not sep:
            raise ValueError
        moment = datetime.datetime.fromisoformat(when.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--deadline {text}: write PROBLEM=YYYY-MM-DDTHH:MM[:SS][Z]") from None
    return problem.strip(), moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def safe_filename(name: str | None) -> str:
    """The upload's own name when it is a plain 'name.py', else 'submission.py' (it becomes a path)."""
    name = (name or "").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    return name if SAFE_NAME.match(name) else "submission.py"


def check_source(source: bytes, filename: str) -> str:
    """The upload as text; Refused(400) unless it is UTF-8 Python that parses (never executed here)."""
    try:
        return parse_source(source, filename)
    except SubmissionFileError as error:  # one line over HTTP: a syntax error's source and caret stay local
        raise Refused(400, str(error).splitlines()[0]) from None


def choose_problem(asked: str | None, text: str, known: list[str]) -> str:
    """The form's problem, else the file's '#!POPCORN leaderboard' line; Refused(400) if unknown or
    if the two disagree."""
    if asked and asked not in known:
        raise Refused(400, f"unknown problem '{asked}': choose one of {', '.join(known)}")
    try:
        problem = agreed_problem(asked, directives(text).get("leaderboard"), "the file", known)
    except SubmissionFileError as error:
        raise Refused(400, str(error)) from None
    if not problem:
        raise Refused(400, "no problem: send the 'problem' field or add a '#!POPCORN leaderboard <problem>' line")
    if problem not in known:
        raise Refused(400, f"unknown problem '{problem}': choose one of {', '.join(known)}")
    return problem


def check_mode(mode: str) -> None:
    if mode not in SERVICE_MODES:
        raise Refused(400, f"bad mode '{mode}': choose one of {', '.join(SERVICE_MODES)}")


def check_size(size: int, limits: Limits) -> None:
    if size > limits.max_file_bytes:
        raise Refused(413, f"file too large: {size} bytes, the limit is {limits.max_file_bytes}")


def check_deadline(problem: str, mode: str, limits: Limits, now: datetime.datetime | None = None) -> None:
    deadline = limits.deadlines.get(problem)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    if MODES[mode].ranked and deadline is not None and now > deadline:
        raise Refused(403, f"the deadline of {problem} was {deadline.isoformat()}: ranked submissions are closed "
                           "(test and benchmark modes still run)")


def check_user_quota(connection: sqlite3.Connection, user_id: int, limits: Limits) -> None:
    unfinished = jobs.count_unfinished(connection, user_id)
    if unfinished >= limits.max_unfinished:
        raise Refused(429, f"you have {unfinished} submissions queued or running, the limit is "
                           f"{limits.max_unfinished}: wait for one to finish")
    recent = jobs.count_since(connection, user_id, hours=1)
    if recent >= limits.per_hour:
        raise Refused(429, f"{recent} submissions in the last hour, the limit is {limits.per_hour}: try again later")
