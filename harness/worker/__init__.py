"""Code that runs inside the worker process, beside the untrusted submission.

Anything here can be read and changed by the submission (gc, inspect, ctypes): it carries no
verdict and no time the parent trusts unless the compiled core (``_sealed``, csrc/) signed it.
It imports nothing from ``harness.judge`` or any other trusted package (tests/test_layout.py).
"""
