"""Fault: os._exit in the middle of a call (no Python cleanup, no error message on the channel)."""

import os


def custom_kernel(data):
    os._exit(7)
