"""Cheat 5: patch json.dumps, which encodes the worker's result header, to divide every reported
time by 100 on its way to the parent. The output itself is computed honestly."""

import json

import _honest

_dumps = json.dumps


def _forging_dumps(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("op") == "output":
        obj = {**obj, "time_us": obj["time_us"] / 100, "host_us": obj["host_us"] / 100}
    return _dumps(obj, *args, **kwargs)


def custom_kernel(data):
    json.dumps = _forging_dumps
    return _honest.gemv(data)
