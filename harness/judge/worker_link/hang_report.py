"""Where a worker past its time limit was: the line of the submission it hung in, read from the
faulthandler dump of its stacks, for the one-line reason of a timeout."""

from __future__ import annotations

import os
import re
from pathlib import Path

_FRAME = re.compile(r'File "([^"\n]+)", line (\d+) in (\S+)')


def hung_at(stacks: str, submission: Path) -> str:
    """"; it was at submission.py:7 in custom_kernel": the innermost line of the submission's file in
    a faulthandler dump of a worker past its limit (else its first frame); empty without a dump."""
    frames = _FRAME.findall(stacks)
    own = [f for f in frames if os.path.realpath(f[0]) == os.path.realpath(submission)]
    if not frames:
        return ""
    file, line, name = (own or frames)[0]
    where = f"; it was at {Path(file).name}:{line} in {name}"
    if not own and name == "time_call":  # custom_kernel returned: the core waits for the GPU work it left
        return where + " (the harness waiting for the GPU: a kernel custom_kernel launched never finished)"
    return where
