"""Providers a checkout brings with it: found before init, carried to the results as CodeRuns."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from core.projects import Project
from tests.test_sandbox import _dirs, _terraform
from workers.adapters.terraform import pipeline
from workers.adapters.terraform.local_providers import COMMITTED, checkout_code_runs
from workers.adapters.terraform.sandbox import Sandbox

FAKE = "registry.terraform.io/example/fake/1.0.0/linux_amd64/terraform-provider-fake_v1.0.0"
NEEDS_FAKE = 'terraform {\n  required_providers {\n    fake = { source = "example/fake", version = "1.0.0" }\n  }\n}\n'


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    (tmp_path / "src" / "infra").mkdir(parents=True)
    (tmp_path / "src" / "infra" / "main.tf").write_text('resource "terraform_data" "x" {}\n')
    return tmp_path / "src"


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def keys(checkout: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    return {r.key: r.digest for r in checkout_code_runs(checkout, checkout / "infra", env or {})}


def test_a_clean_project_brings_nothing(checkout: Path) -> None:
    put(checkout / "terraform.d" / "README", "not under terraform.d/plugins")
    put(checkout / "infra" / ".terraform.lock.hcl", "# lock file: no code")
    assert keys(checkout) == {}


@pytest.mark.parametrize("committed", COMMITTED)
def test_committed_provider_directories(checkout: Path, committed: str) -> None:
    binary = put(checkout / "infra" / committed / FAKE, "#!/bin/sh\nrm -rf /\n")
    (run,) = checkout_code_runs(checkout, checkout / "infra", {})
    assert run.key == f"run providers from {committed}" and run.key.startswith("run ")
    assert run.what == f"provider binaries committed at infra/{committed} (run at plan and apply)"
    assert len(run.digest) == 32 and keys(checkout) == {run.key: run.digest}
    binary.write_text("#!/bin/sh\nrm -rf /home\n")
    assert keys(checkout)[run.key] != run.digest  # another binary: another digest


def test_symlinks_are_recorded_never_followed(checkout: Path) -> None:
    (checkout / "infra" / "terraform.d").mkdir()
    os.symlink("/", checkout / "infra" / "terraform.d" / "plugins")  # walking it would read the whole host
    first = keys(checkout)
    assert list(first) == ["run providers from terraform.d/plugins"]
    (checkout / "infra" / "terraform.d" / "plugins").unlink()
    os.symlink("/usr", checkout / "infra" / "terraform.d" / "plugins")
    assert keys(checkout) != first


def cli_config(tmp_path: Path, body: str) -> dict[str, str]:
    return {"TF_CLI_CONFIG_FILE": str(put(tmp_path / "operator" / "cli.tfrc", body))}


def mirror(path: str) -> str:
    return f'provider_installation {{\n  filesystem_mirror {{\n    path = "{path}"\n  }}\n}}\n'


def test_cli_config_paths_inside_the_checkout(checkout: Path, tmp_path: Path) -> None:
    put(checkout / "vendor" / FAKE, "binary")
    assert keys(checkout, cli_config(tmp_path, mirror(str(tmp_path / "operator" / "mirror")))) == {}
    assert keys(checkout, cli_config(tmp_path, mirror("/opt/mirror"))) == {}
    relative = keys(checkout, cli_config(tmp_path, mirror("../vendor")))
    assert list(relative) == ["run providers from ../vendor (filesystem_mirror of the CLI config)"]
    inside = keys(checkout, cli_config(tmp_path, mirror(str(checkout / "vendor"))))
    assert list(inside) == [f"run providers from {checkout / 'vendor'} (filesystem_mirror of the CLI config)"]
    overrides = 'provider_installation {\n  dev_overrides {\n    "example/fake" = "tools"\n  }\n}\n'
    assert list(keys(checkout, cli_config(tmp_path, overrides))) == [
        "run providers from tools (dev_overrides example/fake of the CLI config)"
    ]


def test_cli_config_fails_closed(checkout: Path, tmp_path: Path) -> None:
    unreadable = keys(checkout, cli_config(tmp_path, "provider_installation {\n  filesystem_mirror {\n"))
    assert list(unreadable) == ["run providers from an unreadable CLI config"]
    assert keys(checkout, {"TF_CLI_CONFIG_FILE": str(tmp_path / "missing.tfrc")}) == {}
    put(checkout / "infra" / "cli.tfrc", mirror("/opt/mirror"))
    assert list(keys(checkout, {"TF_CLI_CONFIG_FILE": "cli.tfrc"})) == [
        "run providers as the checkout's CLI config says"
    ]


def test_terraform_installs_a_committed_provider_and_the_result_says_so(tmp_path: Path) -> None:
    """Real terraform, no network: `terraform.d/plugins` in the project is an implied mirror that init
    installs from; the pipeline finds it before init and every result of the plan carries it."""
    dirs = _dirs(tmp_path, NEEDS_FAKE)
    marker = tmp_path / "committed-binary-ran"
    put(dirs.src / "infra" / "terraform.d" / "plugins" / FAKE, f"#!/bin/sh\ntouch '{marker}'\nexit 1\n").chmod(0o755)
    tf = _terraform(Sandbox("off"), tmp_path)
    project = Project("infra", "infra")
    planned = pipeline.plan(tf, project, dirs)
    assert planned.plan is None and "example/fake" in planned.text  # it cannot serve a plan...
    assert marker.exists()  # ...but terraform ran it: an apply would too, with the apply's credentials
    (run,) = planned.code_runs
    assert run.key == "run providers from terraform.d/plugins"
    result = pipeline.result(project, "a" * 40, tf.tool, planned)
    assert result.code_runs == (run,) == result.checkout_code_runs
    assert pickle.loads(pickle.dumps(result)) == result  # RQ keeps results pickled


def test_a_result_pickled_before_code_runs_existed_reads_as_none() -> None:
    """Results already in Redis when this version starts have no checkout_code_runs (nor a plan's
    code_runs): the fields' defaults stand in."""
    result = pipeline.failure(Project("infra", "infra"), "a" * 40, "checkout failed")
    old = pickle.loads(pickle.dumps(result))
    del old.__dict__["checkout_code_runs"]
    assert old.checkout_code_runs == () and old.code_runs == ()
