"""Fault: the import itself never finishes. The import stage limit must end it."""

import threading

threading.Event().wait()  # blocks forever at import time


def custom_kernel(data):
    return data[-1]
