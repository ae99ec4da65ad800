"""The CI workflow: right triggers, a self-hosted GPU runner, the secret passed, pages uploaded."""

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "leaderboard.yml"


def test_workflow_shape():
    spec = yaml.safe_load(WORKFLOW.read_text())
    triggers = spec.get("on", spec.get(True))  # YAML 1.1 reads a bare 'on' as true
    assert triggers["push"]["paths"] == ["submissions/**"] and "workflow_dispatch" in triggers
    job = spec["jobs"]["leaderboard"]
    assert job["runs-on"] == ["self-hosted", "gpu"]
    steps = job["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert any("pip install -e '.[test]'" in step.get("run", "") for step in steps)
    [run] = [step for step in steps if "make leaderboard" in step.get("run", "")]
    assert run["env"]["NVFP4_SECRET_SEED"] == "${{ secrets.NVFP4_SECRET_SEED }}"
    [upload] = [step for step in steps if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["path"] == "results/leaderboard" and upload["if"] == "always()"
