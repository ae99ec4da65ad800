"""scripts/tune_nvfp4.py on the CPU: its grid names only keys the submissions take; no GPU, one line."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")


def _tune_module():
    spec = importlib.util.spec_from_file_location("tune_nvfp4", ROOT / "scripts" / "tune_nvfp4.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_grid_key_is_a_configuration_key_of_its_file() -> None:
    from harness.sol.replay_clock import load_shipped

    tune = _tune_module()
    for problem, (path, entry) in tune.FILES.items():
        kernel = load_shipped(ROOT / path)
        accepted = set(kernel.__globals__["DEFAULT_CONFIG"]) | {"split_k"}
        assert callable(kernel.__globals__[entry])
        for config in tune.GRID[problem]:
            assert set(config) <= accepted, f"{problem}: {config} names keys outside {sorted(accepted)}"


def test_without_a_gpu_it_says_so_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "scripts/tune_nvfp4.py", str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "tune_nvfp4: needs a CUDA GPU (run it through scripts/gpu_check.sh tune_nvfp4)"
    ]
    assert not (tmp_path / "out.json").exists()
