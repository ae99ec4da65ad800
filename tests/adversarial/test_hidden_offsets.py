"""The rows that read the core's hidden page (s20, s23) read its events where core_state.h puts them.

A field added to ``hidden_state`` before the events moves them; a row still reading the old offset
finds no event and runs honestly, passing without testing anything (s20 read offset 72 for a day).
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from adversarial_suite import REPO, SUBMISSIONS

PROGRAM = """#include <stddef.h>
#include <stdio.h>
#include "core_state.h"
int main(void) {
    printf("%zu %zu\\n", offsetof(hidden_state, start_event), offsetof(hidden_state, end_event));
    return 0;
}
"""


def test_rows_read_the_events_at_core_state_offsets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler on this machine")
    source, program = tmp_path / "offsets.c", tmp_path / "offsets"
    source.write_text(PROGRAM)
    subprocess.run([compiler, "-I", str(REPO / "harness/worker/csrc"), "-I", sysconfig.get_paths()["include"],
                    str(source), "-o", str(program)], check=True)
    start, end = (int(x) for x in subprocess.run([str(program)], capture_output=True, text=True,
                                                 check=True).stdout.split())
    monkeypatch.syspath_prepend(str(SUBMISSIONS))
    import _window

    assert (start, end) == (_window.HIDDEN_START_EVENT, _window.HIDDEN_END_EVENT)
