"""What a review finds: typed flags with their evidence, an entry's review, and the verdict rule.

Why a verdict of three words: the organizer acts on it before prizes. ``reproduces not`` means the
entry's stored result could not be made again (its rank does not hold, or the fresh run failed);
``look here`` means something needs a person's eyes (a static flag, a physics-floor breach, the
profiler's clock against the harness's, a sanitizer finding); ``clean`` means nothing was found by
the checks that ran, which ``not_run`` lists beside it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class FlagClass(str, enum.Enum):
    """The kind of a flag; the value is what JSON, the database and the pages carry."""

    NATIVE_REACH = "native_reach"  # ctypes, cffi, mprotect, /proc/self/maps or mem, dlopen
    PROCESS_TRICKS = "process_tricks"  # fork, setsid, signals, subprocesses, threads
    PYTHON_REACH = "python_reach"  # gc, inspect, profilers and tracers, frames, sys.modules, the harness's modules
    STREAMS_GRAPHS = "streams_graphs"  # other CUDA streams, stream contexts, CUDA graphs
    PERSISTING_L2 = "persisting_l2"  # access-policy windows, the persisting-L2 limit
    MONKEYPATCH = "monkeypatch"  # assignments to attributes of torch (or any imported module)
    POINTER_CACHE = "pointer_cache"  # a cache keyed by data_ptr / id whose value reaches the output
    OBFUSCATION = "obfuscation"  # assembled names, exec/eval, encoded blobs, token-pasted CUDA names
    KERNELGUARD = "kernelguard"  # a kernelguard rule of its own (outside the classes above)
    SOURCE = "source"  # the reviewed bytes are not at hand, or cannot be read
    PHYSICS_FLOOR = "physics_floor"  # faster than the speed of light, or one shape far out of line
    RERUN = "rerun"  # a fresh ranked run does not reproduce the stored result
    CLOCK = "clock"  # the profiler's kernel time disagrees with the harness's clock
    SANITIZE = "sanitize"  # compute-sanitizer found an error on a test shape

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    FlagClass.NATIVE_REACH: "native reach",
    FlagClass.PROCESS_TRICKS: "process tricks",
    FlagClass.PYTHON_REACH: "Python reach",
    FlagClass.STREAMS_GRAPHS: "other streams and graphs",
    FlagClass.PERSISTING_L2: "persisting-L2 API",
    FlagClass.MONKEYPATCH: "monkeypatch",
    FlagClass.POINTER_CACHE: "cache keyed by data_ptr/id",
    FlagClass.OBFUSCATION: "obfuscation",
    FlagClass.KERNELGUARD: "kernelguard rule",
    FlagClass.SOURCE: "source",
    FlagClass.PHYSICS_FLOOR: "physics floor",
    FlagClass.RERUN: "does not reproduce",
    FlagClass.CLOCK: "independent clock",
    FlagClass.SANITIZE: "sanitize",
}

STATIC_CLASSES = (FlagClass.NATIVE_REACH, FlagClass.PROCESS_TRICKS, FlagClass.PYTHON_REACH,
                  FlagClass.STREAMS_GRAPHS, FlagClass.PERSISTING_L2, FlagClass.MONKEYPATCH,
                  FlagClass.POINTER_CACHE, FlagClass.OBFUSCATION)
"""The classes the static read must find in a planted file (tests/review/planted/)."""

EVIDENCE_CHARS = 240
"""Evidence is one line: source lines and reasons are cut to this length."""


def one_line(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """One printable line: evidence quotes the submission's text, which must not reach a terminal's controls."""
    text = "".join(c if c.isprintable() else "?" for c in " ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Flag:
    """One finding: its class, what the rule saw, and where (file and line where there is one)."""

    klass: FlagClass
    evidence: str
    file: str | None = None
    line: int | None = None
    rule: str = ""  # which rule said so: "ours", "kernelguard:TIMER_MONKEYPATCH", "physics", ...

    @property
    def where(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def to_json(self) -> dict[str, Any]:
        return {"class": self.klass.value, "label": self.klass.label, "file": self.file, "line": self.line,
                "evidence": self.evidence, "rule": self.rule}

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Flag:
        return cls(FlagClass(record["class"]), record["evidence"], record.get("file"), record.get("line"),
                   record.get("rule", ""))


def flag_at(klass: FlagClass, what: str, file: str, line: int | None, code: str = "", rule: str = "ours") -> Flag:
    """A static flag: what was found and, when known, the source line it was found on."""
    evidence = f"{what}: {code.strip()}" if code.strip() else what
    return Flag(klass, one_line(evidence), file, line, rule)


class Verdict(str, enum.Enum):
    CLEAN = "clean"
    LOOK_HERE = "look here"
    REPRODUCES_NOT = "reproduces not"


def verdict_of(flags: list[Flag]) -> Verdict:
    """reproduces not > look here > clean: a result that cannot be made again outranks any flag."""
    if any(f.klass == FlagClass.RERUN for f in flags):
        return Verdict.REPRODUCES_NOT
    return Verdict.LOOK_HERE if flags else Verdict.CLEAN


@dataclass
class EntryReview:
    """The review of one leaderboard entry: the stored run it is about, flags, checks not run."""

    problem: str
    run_id: int
    rank: int | None  # the board's rank (None for an author's other file)
    author: str
    submission: str
    sha256: str
    score_us: float | None
    flags: list[Flag] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # one line per check that did not run, with why
    files: list[str] = field(default_factory=list)  # the files the static read covered
    rerun: dict[str, Any] | None = None  # the fresh ranked run's figures, where it ran
    reviewed_at: str = ""

    @property
    def verdict(self) -> Verdict:
        return verdict_of(self.flags)

    def to_json(self) -> dict[str, Any]:
        return {"problem": self.problem, "run_id": self.run_id, "rank": self.rank, "author": self.author,
                "submission": self.submission, "sha256": self.sha256, "score_us": self.score_us,
                "verdict": self.verdict.value, "flags": [f.to_json() for f in self.flags],
                "not_run": list(self.not_run), "files": list(self.files), "rerun": self.rerun,
                "reviewed_at": self.reviewed_at}

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> EntryReview:
        return cls(record["problem"], record["run_id"], record.get("rank"), record["author"], record["submission"],
                   record["sha256"], record.get("score_us"), [Flag.from_json(f) for f in record.get("flags", [])],
                   list(record.get("not_run", [])), list(record.get("files", [])), record.get("rerun"),
                   record.get("reviewed_at", ""))
