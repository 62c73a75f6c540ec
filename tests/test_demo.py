"""`plangate demo --no-serve` runs the whole story through real processes; its state file is the proof."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_demo_tells_the_story_and_changes_real_state(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # the demo starts its own Redis
    result = subprocess.run(
        [sys.executable, "-m", "plangate", "demo", "--no-serve", "--workdir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-4000:]
    steps = [
        "PR #1 opened by @alice",
        "Plan: 1 to add, 0 to change, 1 to destroy.",
        "`terraform_data.legacy`",
        "plangate/destroy on",
        "failure: 1 to destroy — comment /approve-destroy",
        "@alice /approve-destroy refused",
        "reactions on @alice's comment: eyes, -1",
        "Approved by @bob: 1 destroy",
        "success: 1 destroy approved by @bob",
        "@bob merges #1",
        "Apply complete! Resources: 1 added, 0 changed, 1 destroyed.",
        "state after:  terraform_data.api, terraform_data.web",
    ]
    positions = [out.find(step) for step in steps]
    assert all(p >= 0 for p in positions), [s for s, p in zip(steps, positions, strict=True) if p < 0]
    assert positions == sorted(positions), "the story's steps are out of order"
    state = json.loads((tmp_path / "state" / "terraform.tfstate").read_text())
    names = {r["name"] for r in state["resources"] if r["mode"] == "managed"}
    assert names == {"web", "api"}  # gained the created one, lost the approved destroy
