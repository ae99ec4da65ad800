"""A process's long-lived objects kept out of the collector's way (harness/contract/long_lived.py): the parent's
freeze made once, its later objects left collectable; a worker's collection off while it imports, then one
full collection, and nothing frozen (a submission walking its collector finds what it always did)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PARENT = """
import gc, weakref
from harness.contract import long_lived

class Node:
    pass

kept = [Node() for _ in range(1000)]
long_lived.freeze_once()
first = gc.get_freeze_count()
assert first >= 1000
a, b = Node(), Node()
a.other, b.other = b, a  # an evaluation's cycle, made after the freeze
gone = weakref.ref(a)
long_lived.freeze_once()
assert gc.get_freeze_count() == first, "frozen once: a later evaluation's objects stay collectable"
del a, b
gc.collect()
assert gone() is None
print("ok")
"""

WORKER = """
import gc, weakref
from harness.contract import long_lived

class Node:
    pass

long_lived.hold()
assert not gc.isenabled(), "no collection while the worker imports"
a, b = Node(), Node()
a.other, b.other = b, a
gone = weakref.ref(a)
del a, b
kept = Node()
long_lived.release()
assert gc.isenabled() and gone() is None, "one full collection, then collection on"
assert gc.get_freeze_count() == 0, "a worker freezes nothing"
assert any(o is kept for o in gc.get_objects()), "what lives stays where a walk of the collector finds it"
print("ok")
"""


def run(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_the_parent_freezes_once_and_a_later_evaluations_garbage_is_freed() -> None:
    run(PARENT)


def test_a_worker_holds_collection_while_it_imports_then_collects_once_and_freezes_nothing() -> None:
    run(WORKER)


def test_the_collector_clock_counts_the_collections_inside_its_span_only() -> None:
    import gc

    from harness.contract import long_lived

    gc.collect()  # outside: not counted
    with long_lived.CollectorClock() as clock:
        assert clock.ms == 0.0
        gc.collect()
        inside = clock.ms
    assert inside > 0.0
    gc.collect()
    assert clock.ms == inside, "the callback is gone once the span ends"
    assert clock._tick not in gc.callbacks
