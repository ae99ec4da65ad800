"""Sealed class: replay the first call's result message (time, outputs and MAC) for every later call."""

import _honest
import _reach

first = []


def replay(header, parts):
    if header.get("op") != "output":
        return header, parts
    if not first:
        first.append((header, parts))
        return header, parts
    return first[0]


_reach.shadow_send(replay)


def custom_kernel(data):
    return _honest.gemv(data)
