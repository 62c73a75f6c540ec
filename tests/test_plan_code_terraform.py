"""Code an apply would run, read from real terraform/tofu plans (terraform_data only, no network).

Observed with terraform 1.11.4: the `configuration` section lists each provisioner as `type` and
`expressions` only. `when = destroy` and `on_failure` are not written: a destroy-time provisioner cannot
be told from a create-time one. A `removed` block (≥ 1.7) does not appear at all, not even with a
provisioner in it, though that provisioner runs when the object is destroyed. Expressions that are not
constants are written as their references only (`"echo ${self.id}"` → `["self.id", "self"]`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.plan import CodeRun, Plan
from tests.tfplans import Project

pytestmark = pytest.mark.slow

CREATE_TIME = '  provisioner "local-exec" {\n    command = "echo made ${self.id}"\n  }\n'
DESTROY_TIME = '  provisioner "local-exec" {\n    when    = destroy\n    command = "echo gone"\n  }\n'


def with_provisioners(*provisioners: str, name: str = "x", extra: str = "") -> str:
    return f'resource "terraform_data" "{name}" {{\n{extra}{"".join(provisioners)}}}\n'


@pytest.fixture
def project(tmp_path: Path, tf_env: dict[str, str]) -> Project:
    return Project(tmp_path, tf_env)


def runs(plan: Plan) -> dict[str, str]:
    return {r.key: r.what for r in plan.code_runs}


def test_create_runs_create_time_provisioners(project: Project) -> None:
    plan, data, _ = project.plan(with_provisioners(CREATE_TIME))
    assert runs(plan) == {
        "run provisioners of terraform_data.x": "local-exec provisioner of terraform_data.x (at create)"
    }
    (provisioner,) = json.loads(data)["configuration"]["root_module"]["resources"][0]["provisioners"]
    assert provisioner == {"type": "local-exec", "expressions": {"command": {"references": ["self.id", "self"]}}}


def test_when_is_not_in_the_json_so_every_provisioner_counts(project: Project) -> None:
    """Two provisioners, one `when = destroy`: both written alike, both counted at create."""
    plan, data, _ = project.plan(with_provisioners(CREATE_TIME, DESTROY_TIME))
    written = json.loads(data)["configuration"]["root_module"]["resources"][0]["provisioners"]
    assert [sorted(p) for p in written] == [["expressions", "type"], ["expressions", "type"]]
    assert "when" not in json.dumps(written) and "destroy" not in json.dumps(written)
    assert runs(plan) == {
        "run provisioners of terraform_data.x": "local-exec provisioners of terraform_data.x (at create)"
    }


def test_replace_by_triggers_replace(project: Project) -> None:
    body = with_provisioners(CREATE_TIME, DESTROY_TIME, extra='  triggers_replace = "ONE"\n')
    project.apply(body)
    plan, _, _ = project.plan(body.replace("ONE", "TWO"))
    assert runs(plan) == {
        "run provisioners of terraform_data.x": "local-exec provisioners of terraform_data.x (at replace)"
    }


def test_destroy_time_provisioner_on_destroy(project: Project) -> None:
    body = with_provisioners(DESTROY_TIME)
    project.apply(body)
    plan, _, _ = project.plan(body, "-destroy")
    assert runs(plan) == {
        "run provisioners of terraform_data.x": "local-exec provisioner of terraform_data.x (at destroy)"
    }
    counted = with_provisioners(DESTROY_TIME, extra="  count = 0\n")  # an implicit move x → x[0], then a delete
    plan, _, _ = project.plan(counted)
    assert list(runs(plan)) == ["run provisioners of terraform_data.x[0]"]


def test_unchanged_provisioner_resource_runs_nothing(project: Project) -> None:
    body = with_provisioners(CREATE_TIME, DESTROY_TIME)
    project.apply(body)
    plan, _, _ = project.plan(body + 'resource "terraform_data" "other" {}\n')
    assert [c.address for c in plan.changes if c.actions != ("no-op",)] == ["terraform_data.other"]
    assert plan.code_runs == ()


def test_removed_block_provisioner_is_not_in_the_json_and_runs_only_with_its_gated_destroy(project: Project) -> None:
    project.apply('resource "terraform_data" "x" {}\n')
    removed = "removed {\n  from = terraform_data.x\n  lifecycle {\n    destroy = true\n  }\n" + DESTROY_TIME + "}\n"
    plan, data, _ = project.plan(removed)
    assert "removed" not in json.dumps(json.loads(data)["configuration"])
    assert [c.address for c in plan.destroys] == ["terraform_data.x"]  # gated: it needs /approve-destroy
    assert plan.code_runs == ()


def test_module_instance(project: Project) -> None:
    module = project.dir / "mod"
    module.mkdir()
    (module / "main.tf").write_text(with_provisioners(CREATE_TIME, extra="  count = 1\n"))
    plan, _, _ = project.plan('module "m" {\n  source   = "./mod"\n  for_each = toset(["k"])\n}\n')
    address = 'module.m["k"].terraform_data.x[0]'
    assert runs(plan) == {f"run provisioners of {address}": f"local-exec provisioner of {address} (at create)"}


def test_digest_is_stable_and_follows_the_command(project: Project) -> None:
    def run_of(command: str) -> CodeRun:
        provisioner = f'  provisioner "local-exec" {{\n    command = "{command}"\n  }}\n'
        (run,) = project.plan(with_provisioners(provisioner, extra='  input = "a"\n'))[0].code_runs
        return run

    first = run_of("echo hi")
    assert run_of("echo hi") == first
    assert run_of("rm -rf /").digest != first.digest
