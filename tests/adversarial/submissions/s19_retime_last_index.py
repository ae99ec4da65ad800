"""Issue 40, re-timing (native, ctypes): find the core's last_index in its writable data by value (the
words there that held the index of one call and hold the next one's after it), write the index
before it, and time the same call again: the second time custom_kernel recomputes only half of c
(the other half is still there), and the faster of the two signed results is sent. The index now
lives on the core's hidden page: nothing in the core's image counts calls (the search finds nothing
there: _window.core_mappings ends at the image's end, so no heap word that happens to hold the index is
rewritten, which crashed the worker now and then), and the call is timed again anyway, as an attacker
would blind: the second call is refused as already timed, but it opened the call-state page at its
entry, which the syscall supervisor counts: the parent finds one opening more than the results it was
sent, and rejects the run."""

import ctypes

import _honest
import _reach
import _window

timer = _reach.timer()
time_call = type(timer).time_call
again = []  # set while the same call is timed a second time
tracked = {}  # address -> the index it held after the last call


def custom_kernel(data):
    rows = _honest.halves(data)[0] if again else slice(None)
    _honest.gemv_rows(data, rows)
    return data[-1]


def timed_twice(data, index, seed, sleep_us, *rest, **options):
    first = time_call(data, index, seed, sleep_us, *rest, **options)
    hits = set(_window.find_in_core_data(index))
    following = [address for address in hits if tracked.get(address) == index - 1]
    tracked.clear()
    tracked.update(dict.fromkeys(hits, index))
    if len(following) <= 4:  # more would be no counter of calls
        for address in following:
            ctypes.c_longlong.from_address(address).value = index - 1
    again.append(True)
    try:
        second = time_call(data, index, seed, sleep_us, *rest, **options)
    except RuntimeError:  # "already timed": the core kept its own count
        return first
    finally:
        again.clear()
    return min((first, second), key=lambda answer: answer[1] if answer[0] == "ok" else float("inf"))


timer.time_call = timed_twice
