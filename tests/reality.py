"""A project whose objects terraform really refreshes: the `reality` provider (tests/providers/reality_provider.py).

terraform_data's refresh returns its state unchanged, so nothing done to it is ever drift terraform can
see. `reality_object`s are files the provider reads on every refresh: edit one, or edit the state's
copy of it, and the next plan's `resource_drift` names the attribute. The provider is installed from
a filesystem mirror outside every checkout, named by an operator's CLI config (TF_CLI_CONFIG_FILE,
passed to terraform with PLANGATE_TF_ENV): plangate treats it as the operator's, like a registry's.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

from tests.tfproject import tool

SOURCE = "example.com/test/reality"
PROVIDER = Path(__file__).parent / "providers" / "reality_provider.py"


def install(root: Path) -> dict[str, str]:
    """The provider's mirror and CLI config under `root` (a directory every terraform step may read);
    the settings that hand them to plangate's terraform steps, its interpreter readable in the sandbox."""
    binary = root / "mirror" / SOURCE / "1.0.0" / "linux_amd64" / "terraform-provider-reality_v1.0.0"
    binary.parent.mkdir(parents=True, exist_ok=True)
    paths = [p for p in site.getsitepackages() if Path(p).is_dir()]
    launch = (
        f"import sys; sys.path[:0] = {paths!r}; import runpy; runpy.run_path({str(PROVIDER)!r}, run_name='__main__')"
    )
    binary.write_text(f'#!/bin/sh\nexec {sys.executable} -c "{launch}" "$@"\n')
    binary.chmod(0o755)
    config = root / "cli.tfrc"
    config.write_text(
        "provider_installation {\n"
        f'  filesystem_mirror {{\n    path = "{root / "mirror"}"\n    include = ["{SOURCE}"]\n  }}\n'
        f'  direct {{\n    exclude = ["{SOURCE}"]\n  }}\n'
        "}\n"
    )
    readable = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), PROVIDER.parent.resolve()}
    readable |= {Path(p).resolve() for p in paths}
    return {
        "TF_CLI_CONFIG_FILE": str(config),
        "PLANGATE_TF_ENV": "TF_CLI_CONFIG_FILE",
        "PLANGATE_SANDBOX_PATHS": ",".join(sorted(str(p) for p in readable)),
    }


def main_tf(state: Path, objects: dict[str, Path]) -> str:
    """A local backend at `state` and one `reality_object` per name, kept in the file its path names."""
    lines = [
        "terraform {",
        f'  backend "local" {{\n    path = "{state}"\n  }}',
        f'  required_providers {{\n    reality = {{ source = "{SOURCE}" }}\n  }}',
        "}",
        "",
    ]
    for name, path in objects.items():
        lines += [f'resource "reality_object" "{name}" {{', f'  path = "{path}"', "}", ""]
    return "\n".join(lines)


def apply_directly(workdir: Path, text: str, env: dict[str, str]) -> None:
    """What main looked like after its last apply (HOME there: the provider caches its TLS key in it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "main.tf").write_text(text)
    run_env = {**os.environ, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1", "HOME": str(workdir), **env}
    for args in (["init", "-input=false"], ["apply", "-input=false", "-auto-approve"]):
        subprocess.run([tool(), *args], cwd=workdir, env=run_env, check=True, capture_output=True)
