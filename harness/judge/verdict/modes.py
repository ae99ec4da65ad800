"""The modes of an evaluation, each one typed record: the only place a mode's name means anything.

The CLI, the evaluation, the leaderboard and the service ask a ``Mode`` what it does (which cases
it runs, its stopping rule, whether it can be ranked, whether the service takes it) instead of
comparing its name.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.judge.verdict.stopping import BENCHMARK_RULE, CPU_RULE, LEADERBOARD_RULE, StoppingRule


class UnknownModeError(ValueError):
    """A mode name that is not one of ``MODES``; the message lists the choices."""


@dataclass(frozen=True)
class Mode:
    """What one mode runs and how its result may be used."""

    name: str
    help: str
    runs_tests: bool
    runs_benchmarks: bool
    gpu_rule: StoppingRule = BENCHMARK_RULE
    ranked: bool = False  # secret seeds, the sealed core required on a GPU, a rankable result
    profiled: bool = False  # each benchmark shape's call profiled once more
    sanitized: bool = False  # one plain call per test shape under compute-sanitizer
    service_accepts: bool = False

    def rule(self, device: str) -> StoppingRule:
        """The stopping rule on this device (the CPU's times are never ranked)."""
        return CPU_RULE if device == "cpu" else self.gpu_rule

    def kinds(self, device: str) -> tuple[str, ...]:
        """The case kinds it runs here: on the CPU a ranked or default run checks correctness only."""
        if device == "cpu" and self.runs_tests and self.runs_benchmarks:
            return ("test",)
        return (("test",) if self.runs_tests else ()) + (("benchmark",) if self.runs_benchmarks else ())


MODES: dict[str, Mode] = {mode.name: mode for mode in (
    Mode("all", "every test shape, then every benchmark shape (default)", True, True),
    Mode("test", "correctness on every test shape", True, False, service_accepts=True),
    Mode("benchmark", "timing on every benchmark shape, every output checked", False, True,
         service_accepts=True),
    Mode("leaderboard", "ranked: tests then benchmarks with the organizer's secret seed", True, True,
         gpu_rule=LEADERBOARD_RULE, ranked=True, service_accepts=True),
    Mode("profile", "benchmark shapes, then each profiled once", False, True, profiled=True),
    Mode("sanitize", "each test shape once under compute-sanitizer", True, False, sanitized=True),
)}
DEFAULT_MODE = MODES["all"]
RANKED_MODE = MODES["leaderboard"]
SERVICE_MODES = tuple(name for name, mode in MODES.items() if mode.service_accepts)


def mode_named(name: str) -> Mode:
    """The mode called ``name``, or one line naming the choices."""
    try:
        return MODES[name]
    except KeyError:
        raise UnknownModeError(f"unknown mode '{name}': choose one of {', '.join(MODES)}") from None

