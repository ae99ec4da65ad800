"""Stored input digests: the CPU inputs of every cpu_tests case are the bits recorded in tests/data.

The same file is what ``scripts/check_input_digests.py --device cuda`` compares the GPU's inputs with.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

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
