"""scripts/review_summary.py: the device steps' review JSONs merged per entry, and its must-show exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "review_summary.py"


def entry(name: str, verdict: str, flags: list[tuple[str, str]]) -> dict:
    return {"submission": f"/board/nvfp4_gemv/{name}", "rank": 1, "verdict": verdict, "not_run": [],
            "flags": [{"class": c, "file": name, "line": 3, "evidence": e} for c, e in flags]}


def summary(tmp_path: Path, *steps: list[dict]) -> subprocess.CompletedProcess:
    paths = []
    for index, entries in enumerate(steps):
        paths.append(tmp_path / f"review-{index}.json")
        paths[-1].write_text(json.dumps({"entries": entries}))
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths), "--baselines", "base.py",
                           "--cheats", "cheat.py,gone.py"], capture_output=True, text=True, check=False)


def test_the_worst_verdict_of_any_step_wins_and_every_cheat_flagged_is_exit_0(tmp_path):
    done = summary(tmp_path, [entry("base.py", "clean", []), entry("cheat.py", "look here", [("native_reach", "x")])],
                   [entry("base.py", "clean", []), entry("cheat.py", "reproduces not", [("rerun", "y")])])
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["cheat.py", "cheat", "reproduces", "not", "native_reach,", "rerun"]
    assert "not on the board (their ranked run failed, or below --top): gone.py" in done.stdout


def test_a_flagged_baseline_or_a_clean_cheat_is_exit_1(tmp_path):
    assert summary(tmp_path, [entry("base.py", "look here", [("obfuscation", "z")]),
                              entry("cheat.py", "look here", [("native_reach", "x")])]).returncode == 1
    assert summary(tmp_path, [entry("base.py", "clean", []), entry("cheat.py", "clean", [])]).returncode == 1
    assert summary(tmp_path, [entry("base.py", "clean", [])]).returncode == 1  # no cheat on the board: unproven
