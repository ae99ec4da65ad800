"""Sealed class: forge the MAC of a faster result under a guessed key (all zeros)."""

import hashlib
import hmac

import _honest
import _reach


def forged(header, parts):
    if header.get("op") == "output":
        header = {**header, "time_us": header["time_us"] * 0.6,
                  "mac": hmac.new(bytes(32), repr(header).encode(), hashlib.sha256).hexdigest()}
    return header, parts


_reach.shadow_send(forged)


def custom_kernel(data):
    return _honest.gemv(data)
