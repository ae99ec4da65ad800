"""Every path where the harness keeps per-user state resolves inside the test session's temporary home."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.user_paths import without_user_settings

REPO = Path(__file__).resolve().parent.parent
RESOLVE = """
import json, platformdirs
from pathlib import Path
from harness.service.client import CONFIG_ENV, DEFAULT_CONFIG
from harness.history.run_history import default_path
from harness.judge.passes.vendor_cache import cache_path
from harness.sol.calibration import default_cache_path
from harness.judge.worker_link.compile_cache import default_root
from harness.bytecode_cache import folder
import os
print(json.dumps({
    "history": str(default_path()),
    "vendor": str(cache_path()),
    "calibration": str(default_cache_path()),
    "client config": str(Path(os.environ.get(CONFIG_ENV, str(DEFAULT_CONFIG))).expanduser()),
    "client config default": str(DEFAULT_CONFIG.expanduser()),
    "user data": platformdirs.user_data_dir("nvfp4-harness"),
    "user cache": platformdirs.user_cache_dir("nvfp4-harness"),
    "user config": platformdirs.user_config_dir("nvfp4-harness"),
    "triton cache": os.environ.get("TRITON_CACHE_DIR", ""),
    "torch extensions": os.environ.get("TORCH_EXTENSIONS_DIR", ""),
    "compile caches": str(default_root()),
    "bytecode cache": str(folder()),
}))
"""


def test_every_user_path_lies_in_the_private_home_even_for_a_subprocess_without_nvfp4_settings():
    home = Path(os.environ["HOME"])
    assert home != Path("~root").expanduser() and "pytest" in str(home), home
    # The service tests' environment (the user's NVFP4_* settings dropped) must keep the private paths:
    # a harness it starts once wrote its run into the user's own history.
    out = subprocess.run([sys.executable, "-c", RESOLVE], capture_output=True, text=True, cwd=REPO, timeout=60,
                         env=without_user_settings(), check=True)
    paths = json.loads(out.stdout)
    outside = {name: path for name, path in paths.items() if not Path(path).resolve().is_relative_to(home.resolve())}
    assert not outside, f"user paths outside the test home {home}: {outside}"
