"""The call-state page through the core's own door: the syscall supervisor lets that page change
protection only from the core's gate (harness/worker/csrc/syscall_gate.c), so open it from there, as
x11 does for the key page: the gate's address and the page's are what the core's exported
nvfp4_gate_describe reports. On the page: the core's start event (s20 re-records it after half the
work, so that the events bracket only the second half) and last_index (s19 rewinds it to time a call
twice). Read at import, in the form every opening outside the timed window takes (the whole page): the
supervisor counts it, and the parent finds the page opened once more than the core opens it. On the
CPU there is no event: the work is honest, and the opening alone is what the run is judged on."""

import _window

START_EVENT = _window.word_through_the_gate(_window.SINGLE_PAGE, 3)


def custom_kernel(data):
    return _window.start_again_after_half(data, START_EVENT)
