"""A tiny real Terraform project (terraform_data only, no network) with its state outside the repo."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from standin.sample import main_tf

__all__ = ["apply_directly", "main_tf", "state_addresses", "tool"]


def tool() -> str:
    found = shutil.which("tofu") or shutil.which("terraform")
    assert found, "end-to-end tests need terraform or tofu on PATH"
    return found


def apply_directly(workdir: Path, text: str, workspace: str = "default") -> None:
    """What main looked like after its last apply: set up the state the PRs are planned against."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "main.tf").write_text(text)
    env = {**os.environ, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    if workspace != "default":
        env["TF_WORKSPACE"] = workspace
    for args in (["init", "-input=false"], ["apply", "-input=false", "-auto-approve"]):
        subprocess.run([tool(), *args], cwd=workdir, env=env, check=True, capture_output=True)


def state_addresses(state_path: Path) -> set[str]:
    if not state_path.exists():
        return set()
    state = json.loads(state_path.read_text())
    return {f"{r['type']}.{r['name']}" for r in state.get("resources", []) if r.get("mode") == "managed"}
