"""The timed window's form as the core names it, read-only and uncounted: the core's gate opens the
call-state page for one byte, PROT_READ, which the filter lets through without asking the supervisor.
That is enough to read the core's start event (not to write last_index), and s20's attack follows:
the start event recorded again after half the work. What stops it is the second clock, which the
submission cannot re-arm: the events then read half of what the clock saw."""

import _window

START_EVENT = _window.word_through_the_gate(1, 1)  # harness.contract.syscall_rules.STATE_WINDOW_BYTES


def custom_kernel(data):
    return _window.start_again_after_half(data, START_EVENT)
