"""Code runs bound to the files they may execute (workers/adapters/terraform/code_files.py)."""

from __future__ import annotations

import json
from pathlib import Path

from core.plan import parse_plan
from workers.adapters.terraform.code_files import bound_to_files, files_digest

PLAN = {
    "format_version": "1.2",
    "resource_changes": [
        {"address": "terraform_data.x", "mode": "managed", "type": "terraform_data", "change": {"actions": ["create"]}}
    ],
    "configuration": {
        "root_module": {
            "resources": [
                {
                    "address": "terraform_data.x",
                    "mode": "managed",
                    "type": "terraform_data",
                    "name": "x",
                    "provisioners": [{"type": "local-exec", "expressions": {"command": {"constant_value": "./go.sh"}}}],
                }
            ]
        }
    },
}


def _project(root: Path, script: str = "echo one\n") -> Path:
    project = root / "infra"
    (project / ".terraform" / "modules").mkdir(parents=True)
    (project / "main.tf").write_text("# config\n")
    (project / "go.sh").write_text(script)
    (root / "modules" / "net").mkdir(parents=True)
    (root / "modules" / "net" / "main.tf").write_text("# module\n")
    modules = {
        "Modules": [{"Key": "", "Dir": "."}, {"Key": "net", "Source": "../modules/net", "Dir": "../modules/net"}]
    }
    (project / ".terraform" / "modules" / "modules.json").write_text(json.dumps(modules))
    return project


def test_a_code_run_is_bound_to_the_scripts_and_modules_it_may_run(tmp_path: Path) -> None:
    project = _project(tmp_path)
    plan = parse_plan(json.dumps(PLAN))
    (run,) = bound_to_files(plan, project, project, tmp_path).code_runs
    assert run.digest != plan.code_runs[0].digest and len(run.digest) == 32
    again = files_digest(project, project, tmp_path)
    assert files_digest(project, project, tmp_path) == again  # the same files: the same digest
    (project / ".terraform" / "plugin.bin").write_text("not the code under review")
    assert files_digest(project, project, tmp_path) == again
    (project / "go.sh").write_text("rm -rf /\n")
    changed = files_digest(project, project, tmp_path)
    (tmp_path / "modules" / "net" / "main.tf").write_text("# another module\n")
    assert len({again, changed, files_digest(project, project, tmp_path)}) == 3


def test_module_records_that_cannot_be_read_never_match_again(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / ".terraform" / "modules" / "modules.json").write_text("{not json")
    assert files_digest(project, project, tmp_path) != files_digest(project, project, tmp_path)


def test_a_plan_without_code_runs_is_left_as_it_is(tmp_path: Path) -> None:
    plan = parse_plan(json.dumps({**PLAN, "configuration": {"root_module": {}}}))
    assert bound_to_files(plan, tmp_path, tmp_path, tmp_path) is plan


def test_module_records_naming_a_host_directory_read_nothing_there(tmp_path: Path) -> None:
    """The plan's code can write modules.json: a Dir outside the checkout is not read (its files would bind
    the same way twice) and never matches again."""
    checkout = tmp_path / "checkout"
    project = _project(checkout)
    secret = tmp_path / "host"
    secret.mkdir()
    (secret / "key.pem").write_text("secret")
    modules = {"Modules": [{"Key": "x", "Source": "./x", "Dir": "../../host"}]}
    (project / ".terraform" / "modules" / "modules.json").write_text(json.dumps(modules))
    assert files_digest(project, project, checkout) != files_digest(project, project, checkout)
