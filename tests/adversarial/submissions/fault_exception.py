"""Fault: an ordinary Python exception. The reason carries its type, message and line."""


def custom_kernel(data):
    raise RuntimeError("deliberate failure inside custom_kernel")
