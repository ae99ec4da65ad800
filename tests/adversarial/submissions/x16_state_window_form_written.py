"""x14 in the one-byte length the timed window's opening once named: the core's gate opens the
call-state page read-write naming one byte (the kernel opens the whole page). That form once ran
unasked (uncounted) and so gave the page to write (last_index, for s19's re-timing) with nothing
counted. Every opening from the gate is notified and counted now, whatever length it names, and the
parent finds one more than the core's."""

import _window

START_EVENT = _window.word_through_the_gate(1, 3)


def custom_kernel(data):
    return _window.start_again_after_half(data, START_EVENT)
