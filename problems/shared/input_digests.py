"""sha256 digests of every tensor generate_input returns: the proof that inputs are the same bits.

A digest covers a tensor's dtype, shape, strides and its bytes in logical order, so two inputs
with the same digests are interchangeable for any kernel. ``tests/data/input_digests.json``
stores them for every ``cpu_tests`` case; CPU tests compare against it, and
``scripts/check_input_digests.py --device cuda`` compares the GPU's inputs with the CPU's.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path
from typing import Any

import torch

from harness.contract.task_spec import list_problems, load_task

DIGESTS_PATH = Path(__file__).resolve().parents[2] / "tests" / "data" / "input_digests.json"
_SAME_WIDTH_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def tensor_digest(t: torch.Tensor) -> str:
    """sha256 of dtype, shape, strides and bytes (read back to the host once)."""
    raw = t.detach().view(_SAME_WIDTH_INT[t.element_size()]).contiguous().view(-1).cpu()
    digest = hashlib.sha256(f"{t.dtype} {tuple(t.shape)} {t.stride()}\n".encode())
    digest.update(raw.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def tree_digests(tree: Any, path: str = "data") -> dict[str, str]:
    """{path in the data tuple, e.g. "data[2]" or "data[0][1][2]": digest} for every tensor."""
    if isinstance(tree, torch.Tensor):
        return {path: tensor_digest(tree)}
    if isinstance(tree, (list, tuple)):
        found: dict[str, str] = {}
        for index, item in enumerate(tree):
            found.update(tree_digests(item, f"{path}[{index}]"))
        return found
    return {}


def generate(problem: str, case: dict[str, Any], device: str) -> Any:
    """The inputs of ``case`` generated on ``device``."""
    reference = importlib.import_module(load_task(problem).reference_module)
    return reference.generate_input(**case, device=device)


def cpu_test_cases() -> list[tuple[str, dict[str, Any]]]:
    """(problem, case) for every task.yml cpu_tests entry, read now (the file follows the tasks)."""
    return [(problem, dict(case)) for problem in list_problems() for case in load_task(problem).cpu_tests]


def current_digests(device: str = "cpu") -> list[dict[str, Any]]:
    """The stored-file records for every cpu_tests case, generated on ``device``."""
    return [
        {"problem": problem, "case": case, "tensors": tree_digests(generate(problem, case, device))}
        for problem, case in cpu_test_cases()
    ]


def read_stored(path: Path = DIGESTS_PATH) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["cases"]


def write_stored(records: list[dict[str, Any]], path: Path = DIGESTS_PATH) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    note = "sha256 of every tensor generate_input returns; regenerate with scripts/check_input_digests.py --write"
    path.write_text(json.dumps({"note": note, "cases": records}, indent=1) + "\n")


def differences(stored: list[dict[str, Any]], current: list[dict[str, Any]]) -> list[str]:
    """One line per cpu_tests case whose stored digests are missing or differ; empty when equal."""
    by_key = {(r["problem"], json.dumps(r["case"], sort_keys=True)): r["tensors"] for r in stored}
    lines = []
    for record in current:
        key = (record["problem"], json.dumps(record["case"], sort_keys=True))
        if key not in by_key:
            lines.append(f"{record['problem']} {record['case']}: no stored digests")
            continue
        stored_tensors, tensors = by_key[key], record["tensors"]
        changed = sorted(p for p in stored_tensors.keys() | tensors.keys() if stored_tensors.get(p) != tensors.get(p))
        if changed:
            lines.append(f"{record['problem']} {record['case']}: {', '.join(changed)} differ")
    return lines
