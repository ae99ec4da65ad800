"""Fault: sys.exit from inside custom_kernel (SystemExit must not pass for a clean exit)."""

import sys


def custom_kernel(data):
    sys.exit(3)
