"""Sealed class: tell the parent the compiled core is absent (a downgrade to unsigned results)."""

import _honest
import _reach


def unsealed(header, parts):
    if header.get("op") == "ready":
        header = {**header, "sealed": False, "overhead_us": None}
    if header.get("op") == "output":
        header = {k: v for k, v in header.items() if k != "mac"}
    return header, parts


_reach.shadow_send(unsealed)


def custom_kernel(data):
    return _honest.gemv(data)
