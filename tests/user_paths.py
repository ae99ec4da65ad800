"""The user paths the test session moves into a temporary home (tests/conftest.py), and an environment
for subprocesses that drops the user's own NVFP4 settings but keeps those private paths."""

from __future__ import annotations

import os

PATH_VARIABLES = {
    "NVFP4_HISTORY_DB": "history/history.db",
    "NVFP4_VENDOR_CACHE": "results/vendor.json",
    "NVFP4_CALIBRATION_CACHE": "results/calibration.json",
    "NVFP4_CONFIG": "config/nvfp4-harness/client.yml",
    "XDG_DATA_HOME": "data",
    "XDG_CACHE_HOME": "cache",
    "XDG_CONFIG_HOME": "config",
    "XDG_STATE_HOME": "state",
    "TRITON_CACHE_DIR": "cache/triton",
    "TORCH_EXTENSIONS_DIR": "cache/torch_extensions",
    "NVFP4_COMPILE_CACHE": "cache/nvfp4-compile",
    "NVFP4_BYTECODE_CACHE": "cache/nvfp4-bytecode",
}
"""Each variable that names a user path, and where it points inside the session's temporary home."""


def without_user_settings() -> dict[str, str]:
    """os.environ less every NVFP4_* setting (secret seed, server, token, sandbox steps) except the
    session's private paths: a harness subprocess started from it writes no file of the user's."""
    return {k: v for k, v in os.environ.items() if not k.startswith("NVFP4_") or k in PATH_VARIABLES}
