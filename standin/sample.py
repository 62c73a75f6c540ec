"""The demo's sample repository: a small Terraform project of `terraform_data` resources only.

No provider to download and nothing outside this machine is touched; the state lives in a local
file outside every checkout, so plans, replacements, destroys and applies are all real.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_DIR = "infra"


def main_tf(state_path: Path, resources: dict[str, str], workspace_dir: Path | None = None) -> str:
    """`workspace_dir`: where the local backend keeps non-default workspaces (else inside the checkout)."""
    backend = [f'    path = "{state_path}"', *([f'    workspace_dir = "{workspace_dir}"'] if workspace_dir else [])]
    lines = ["terraform {", '  backend "local" {', *backend, "  }", "}", ""]
    for name, value in resources.items():
        lines += [f'resource "terraform_data" "{name}" {{', f'  input = "{value}"', "}", ""]
    return "\n".join(lines)


def files(state_path: Path, resources: dict[str, str]) -> dict[str, str | None]:
    return {f"{PROJECT_DIR}/main.tf": main_tf(state_path, resources)}
