"""The timed window's old form: the core's gate asked to open the call-state page for one byte,
read-only, which the filter once let through without asking the supervisor (uncounted), enough to read
the core's start event for s20's attack (the start event recorded again after half the work). The core
opens that page only read-write now, every opening notified and counted, so the supervisor refuses a
read-only opening from the gate (rule 'core') and the attack never reads the event."""

import _window

START_EVENT = _window.word_through_the_gate(1, 1)


def custom_kernel(data):
    return _window.start_again_after_half(data, START_EVENT)
