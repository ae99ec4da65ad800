"""Sealed class (issue 23): find the compiled core's table of torch entry points through gc and
replace one of them. The core used to keep them in a dict it looked up during every timed call,
after the end event and before the output copy: a replaced 'untyped_storage' entry then did the
call's real work, untimed, and the copy read the finished output. custom_kernel itself returns
its output unfilled. The core now holds the callables in C statics captured at init (no dict is
left for gc to find), so the edit has no effect and the unfilled output fails the check."""

import gc

import _honest

pending = {}


def _core_hooks():
    for candidate in gc.get_objects():
        if isinstance(candidate, dict) and "untyped_storage" in candidate and "storage_data_ptr" in candidate:
            return candidate
    return None


def _install(hooks):
    original = hooks["untyped_storage"]

    def untyped_storage(tensor):
        data = pending.pop("data", None)
        if data is not None:
            _honest.gemv(data)  # the work, after the end event and before the output copy
        return original(tensor)

    hooks["untyped_storage"] = untyped_storage


hooks = _core_hooks()
if hooks is not None:
    _install(hooks)


def custom_kernel(data):
    pending["data"] = data
    return data[-1]  # c, still NaN-poisoned: the hook was to fill it
