"""The static read of one entry: its file and every local module it imports, by our rules and kernelguard's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from harness.review import cache_rules, kernelguard_rules, native_source, python_rules
from harness.review.ast_names import read_facts
from harness.review.findings import Flag, FlagClass
from harness.review.source_tree import SourceFile, SourceMissing, local_modules

KERNELGUARD_MISSING = ("kernelguard's rules: not run (kernelguard is not installed: "
                       "pip install 'nvfp4-harness[review]', Python 3.11 or newer)")


@dataclass
class StaticRead:
    flags: list[Flag] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # every file read, the submission first
    not_run: list[str] = field(default_factory=list)


def scan_file(file: SourceFile, guard: ModuleType | None) -> list[Flag]:
    """Every rule over one file; a file that does not parse, or nests past what can be read, is one flag.

    Why the broad catch around kernelguard: it is another project's code over an untrusted file; its
    failure on one file is a flag on that file, never the end of the review.
    """
    try:
        facts = read_facts(file.text, file.name)
        flags = python_rules.scan(facts, file.name) + cache_rules.scan(facts, file.name) + native_source.scan(
            facts, file.name)
    except SyntaxError as error:
        return [Flag(FlagClass.SOURCE, f"does not parse: {error.msg}", file.name, error.lineno, "source")]
    except (RecursionError, ValueError, MemoryError) as error:
        return [Flag(FlagClass.SOURCE, f"cannot be read statically ({type(error).__name__}: {str(error)[:120]})",
                     file.name, None, "source")]
    if guard is not None:
        try:
            flags += kernelguard_rules.scan(guard, file.text, file.name, facts.prose_lines())
        except Exception as error:
            flags.append(Flag(FlagClass.SOURCE, f"kernelguard failed on it ({type(error).__name__})", file.name,
                              None, "kernelguard"))
    return sorted(flags, key=lambda f: (f.line or 0, f.klass.value))


def read_tree(main: SourceFile, roots: Sequence[Path], guard: ModuleType | None) -> StaticRead:
    helpers, notes = local_modules(main, roots)
    read = StaticRead(files=[main.name, *(h.name for h in helpers)], not_run=notes)
    for file in (main, *helpers):
        read.flags += scan_file(file, guard)
    if guard is None:
        read.not_run.append(KERNELGUARD_MISSING)
    return read


def missing(submission_path: str, error: SourceMissing) -> StaticRead:
    """The static read of bytes that cannot be found: one 'source' flag saying where they were looked for."""
    return StaticRead([Flag(FlagClass.SOURCE, str(error), submission_path, None, "source")])


def read_path(path: Path, roots: Sequence[Path] = (), guard: ModuleType | None = None) -> StaticRead:
    """The static read of a file on disk (tests, and the organizer's look at a single file)."""
    return read_tree(SourceFile(str(path), path.read_bytes(), path.resolve()), roots, guard)
