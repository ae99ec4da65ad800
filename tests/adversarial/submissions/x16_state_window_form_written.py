"""x14 in the timed window's form: the core's gate opens the call-state page inside the window naming
one byte, which the filter lets through without asking the supervisor, uncounted. That form once
opened the page read-write, so a jump to the gate in it gave the page to write (last_index, for s19's
re-timing) with nothing counted. Here the gate is asked for that form read-write: the window's form is
read-only now, so this opening is notified and counted like any other, and the parent finds one more
than the core's."""

import _window

START_EVENT = _window.word_through_the_gate(1, 3)  # harness.contract.syscall_rules.STATE_WINDOW_BYTES


def custom_kernel(data):
    return _window.start_again_after_half(data, START_EVENT)
