"""Fault: custom_kernel never returns. The worker's process group must be killed at the stage limit."""

import threading


def custom_kernel(data):
    threading.Event().wait()  # blocks forever, using no CPU
