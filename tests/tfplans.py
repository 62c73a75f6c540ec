"""Real terraform/tofu plans of a config dir whose local state is kept outside it (terraform_data only,
no network): the plan JSON tests read facts from."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from core.plan import Plan, parse_plan
from core.plan_output import rendered_plan

TOOL = shutil.which("tofu") or shutil.which("terraform")

BACKEND = 'terraform {{\n  backend "local" {{\n    path = "{state}"\n  }}\n}}\n'


@pytest.fixture(scope="module")
def tf_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One plugin cache and an empty CLI config for every run in a test module."""
    if TOOL is None:
        pytest.fail("neither tofu nor terraform is on PATH")
    base = tmp_path_factory.mktemp("tf-shared")
    (base / "cli.tfrc").write_text("")
    (base / "plugins").mkdir()
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(base),
        "TF_IN_AUTOMATION": "1",
        "TF_INPUT": "0",
        "CHECKPOINT_DISABLE": "1",
        "TF_PLUGIN_CACHE_DIR": str(base / "plugins"),
        "TF_CLI_CONFIG_FILE": str(base / "cli.tfrc"),
    }


class Project:
    """A config dir with its local state kept outside it, driven step by step like the worker does."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.dir = root / "config"
        self.dir.mkdir()
        self.state = root / "state" / "terraform.tfstate"
        self.env = env
        self.initialised = False

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[bytes]:
        assert TOOL is not None
        proc = subprocess.run([TOOL, *args], cwd=self.dir, env=self.env, capture_output=True, timeout=60)
        if ok:
            assert proc.returncode == 0, proc.stderr.decode()
        return proc

    def configure(self, body: str) -> None:
        (self.dir / "main.tf").write_text(BACKEND.format(state=self.state) + body)
        if not self.initialised:
            self.run("init", "-input=false", "-no-color")
            self.initialised = True

    def apply(self, body: str) -> None:
        self.configure(body)
        self.run("apply", "-auto-approve", "-input=false", "-no-color")

    def plan(self, body: str, *extra: str, ok: bool = True) -> tuple[Plan, bytes, str]:
        """Plan with -out, then `show -json` it; also return the tool's own summary line."""
        self.configure(body)
        out = self.run("plan", "-input=false", "-no-color", "-out=plan.bin", *extra, ok=ok)
        data = self.run("show", "-json", "plan.bin").stdout
        text = self.run("show", "-no-color", "plan.bin").stdout.decode()
        if out.returncode == 0:  # the worker reads the plan's text from its own output instead of `show`
            rendered = rendered_plan(out.stdout.decode())
            assert rendered is not None and rendered.startswith(text), (out.stdout.decode(), text)
            rest = rendered[len(text) :]
            assert rest == "" or rest.startswith("\nWarning: "), rest
        said = [ln.strip() for ln in text.splitlines() if ln.startswith(("Plan:", "No changes."))]
        return parse_plan(data), data, said[-1] if said else ""
