"""Stored input digests: the CPU inputs of every cpu_tests case are the bits recorded in tests/data.

The same file is what ``scripts/check_input_digests.py --device cuda`` compares the GPU's inputs with.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.contract.task_spec import list_problems, load_task
from problems.shared.input_digests import (
    DIGESTS_PATH,
    current_digests,
    differences,
    read_stored,
    tensor_digest,
    tree_digests,
)

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location("input_digests_script", ROOT / "scripts" / "check_input_digests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cpu_inputs_match_the_stored_digests():
    lines = differences(read_stored(), current_digests("cpu"))
    assert not lines, "\n".join(lines) + "\n(if the change is intended: python scripts/check_input_digests.py --write)"


def test_the_digest_covers_dtype_shape_strides_and_bytes():
    base = torch.arange(12, dtype=torch.uint8).reshape(3, 4)
    digests = {
        tensor_digest(base),
        tensor_digest(base.T.contiguous().T),  # same values, other strides
        tensor_digest(base.reshape(4, 3)),
        tensor_digest(base.view(torch.int8)),
        tensor_digest(base + (base == 11)),  # one byte changed
    }
    assert len(digests) == 5
    assert tensor_digest(base) == tensor_digest(base.clone())


def test_tree_digests_name_every_tensor_by_its_place():
    tree = ([(torch.zeros(2), torch.ones(2)), (torch.zeros(3),)], 5, [(1, 2)])
    assert sorted(tree_digests(tree)) == ["data[0][0][0]", "data[0][0][1]", "data[0][1][0]"]


def test_differences_name_the_case_and_the_tensor():
    stored = [{"problem": "p", "case": {"m": 1, "seed": 2}, "tensors": {"data[0]": "aa", "data[1]": "bb"}}]
    same = [{"problem": "p", "case": {"seed": 2, "m": 1}, "tensors": {"data[0]": "aa", "data[1]": "bb"}}]
    changed = [{"problem": "p", "case": {"m": 1, "seed": 2}, "tensors": {"data[0]": "aa", "data[1]": "cc"}}]
    missing = [{"problem": "p", "case": {"m": 3, "seed": 2}, "tensors": {}}]
    assert differences(stored, same) == []
    assert differences(stored, changed) == ["p {'m': 1, 'seed': 2}: data[1] differ"]
    assert differences(stored, missing) == ["p {'m': 3, 'seed': 2}: no stored digests"]


def test_script_checks_writes_and_fails_on_a_changed_file(tmp_path, capsys):
    script = load_script()
    assert script.main([]) == 0
    copy = tmp_path / "digests.json"
    assert script.main(["--write", "--digests", str(copy)]) == 0
    assert json.loads(copy.read_text()) == json.loads(DIGESTS_PATH.read_text())
    record = json.loads(copy.read_text())
    first = record["cases"][0]["tensors"]
    first[sorted(first)[0]] = "0" * 64
    copy.write_text(json.dumps(record))
    assert script.main(["--digests", str(copy)]) == 1
    assert "differ" in capsys.readouterr().out
    assert script.main(["--digests", str(tmp_path / "absent.json")]) == 2


def test_script_device_mode_needs_a_gpu_and_an_output_directory(tmp_path, capsys, monkeypatch):
    script = load_script()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as parse_error:
        script.main(["--device", "cuda"])
    assert parse_error.value.code == 2 and "--out DIR" in capsys.readouterr().err
    assert script.main(["--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "no GPU visible" in capsys.readouterr().err


TRITON_DRAW = r"""
import json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, sys.argv[1])
import torch
from problems.shared import blockscaled, counter_rng, permuted_scales
from problems.shared.input_digests import current_digests, differences, read_stored

# The CUDA route on the CPU: every draw's words in one hash launch, every table's codes in one codes launch,
# every NVFP4 draw's permuted scales in one permute launch.
launches = []
permute_triton = permuted_scales.permuted_triton
permuted_scales.permuted_triton = lambda scales: launches.append("permute") or permute_triton(scales)
permuted_scales._uses_kernel = lambda device: True
hash_triton, codes_triton = counter_rng._hash_triton, counter_rng._codes_triton
counter_rng._hash_triton = lambda keyed, *rest: launches.append("hash") or hash_triton(keyed, *rest)
counter_rng._codes_triton = lambda words, *tables: launches.append("codes") or codes_triton(words, *tables)
blockscaled.random_words = lambda seed, streams, device: counter_rng._words_triton(seed, streams, torch.device(device))
counter_rng._fused = lambda words: words.dim() == 1 and words.is_contiguous()
current = current_digests("cpu")
print(json.dumps({"differences": differences(read_stored(), current), "cases": len(current), "launches": launches}))
"""


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_the_cuda_draw_route_gives_the_stored_bits_in_few_launches_per_draw():
    """The GPU's route (fused kernels, one launch for all streams, one for all table scales and, for the
    NVFP4 problems, one for all permuted scales), interpreted on the CPU: the same bits as the stored digests
    of every cpu_tests case."""
    run = subprocess.run([sys.executable, "-c", TRITON_DRAW, str(ROOT)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["differences"] == []
    draws = result["launches"].count("hash")
    assert draws >= 10 and result["launches"].count("codes") <= draws  # one codes launch a draw at most
    nvfp4_draws = sum(len(load_task(name).cpu_tests) for name in list_problems() if name.startswith("nvfp4_"))
    assert result["launches"].count("permute") == nvfp4_draws  # one a draw of the four NVFP4 problems
