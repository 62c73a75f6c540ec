"""Real terraform/tofu plans (terraform_data only, no network) through parse_plan, the gate and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.gate import Apply, Block, decide_apply, verdict
from core.plan import Plan, summary_line
from plumbing.gate_cli import main as gate_main
from tests.tfplans import Project

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path, tf_env: dict[str, str]) -> Project:
    return Project(tmp_path, tf_env)


def gate_exit(tmp_path: Path, data: bytes) -> int:
    path = tmp_path / "plan.json"
    path.write_bytes(data)
    return gate_main([str(path), "--json"])


def classes(plan: Plan) -> dict[str, str]:
    return {c.address: c.action_class for c in plan.changes}


ONE = 'resource "terraform_data" "a" {\n  input = "x"\n}\n'


def test_create(project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan, data, said = project.plan(ONE)
    assert classes(plan) == {"terraform_data.a": "create"}
    assert plan.destroys == () and plan.errored is False
    assert summary_line(plan) == said == "Plan: 1 to add, 0 to change, 0 to destroy."
    assert decide_apply(plan, frozenset()) == Apply(())
    assert gate_exit(tmp_path, data) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "apply"


def test_no_changes(project: Project) -> None:
    project.apply(ONE)
    plan, _, said = project.plan(ONE)
    assert plan.destroys == () and not plan.has_changes
    assert said.startswith(summary_line(plan)) and summary_line(plan) == "No changes."


def test_update(project: Project) -> None:
    project.apply(ONE)
    plan, _, said = project.plan(ONE.replace('"x"', '"y"'))
    assert classes(plan) == {"terraform_data.a": "update"}
    assert plan.destroys == ()
    assert summary_line(plan) == said == "Plan: 0 to add, 1 to change, 0 to destroy."


def test_delete(project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project.apply(ONE + ONE.replace('"a"', '"b"'))
    plan, data, said = project.plan(ONE)
    (gone,) = plan.destroys
    assert (gone.address, gone.actions, gone.reason) == (
        "terraform_data.b",
        ("delete",),
        "delete_because_no_resource_config",
    )
    assert summary_line(plan) == said == "Plan: 0 to add, 0 to change, 1 to destroy."
    assert verdict(plan).kind == "blocked"
    assert decide_apply(plan, frozenset()) == Block(("1 of 1 to destroy not approved",), ("terraform_data.b",))
    assert decide_apply(plan, frozenset({"terraform_data.b"})) == Apply(("terraform_data.b",))
    assert gate_exit(tmp_path, data) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["destroys"] == [
        {
            "address": "terraform_data.b",
            "deposed": None,
            "actions": ["delete"],
            "reason": "delete_because_no_resource_config",
        }
    ]


def test_replace_by_triggers_replace(project: Project) -> None:
    body = 'resource "terraform_data" "a" {{\n  triggers_replace = "{}"\n}}\n'
    project.apply(body.format("one"))
    plan, _, said = project.plan(body.format("two"))
    (c,) = plan.destroys
    assert (c.actions, c.action_class, c.replace_paths) == (("delete", "create"), "replace", ("triggers_replace",))
    assert summary_line(plan) == said == "Plan: 1 to add, 0 to change, 1 to destroy."


def test_replace_create_before_destroy(project: Project) -> None:
    body = (
        'resource "terraform_data" "a" {{\n  triggers_replace = "{}"\n'
        "  lifecycle {{\n    create_before_destroy = true\n  }}\n}}\n"
    )
    project.apply(body.format("one"))
    plan, _, said = project.plan(body.format("two"))
    (c,) = plan.destroys
    assert (c.actions, c.action_class) == (("create", "delete"), "replace")
    assert summary_line(plan) == said == "Plan: 1 to add, 0 to change, 1 to destroy."


def test_moved_block_is_not_a_destroy(project: Project) -> None:
    project.apply(ONE)
    moved = ONE.replace('"a"', '"b"') + "moved {\n  from = terraform_data.a\n  to   = terraform_data.b\n}\n"
    plan, _, said = project.plan(moved)
    (c,) = plan.changes
    assert (c.address, c.previous_address, c.actions) == ("terraform_data.b", "terraform_data.a", ("no-op",))
    assert plan.destroys == ()
    assert summary_line(plan) == said == "Plan: 0 to add, 0 to change, 0 to destroy."
    assert isinstance(decide_apply(plan, frozenset()), Apply)


def test_removed_without_destroy_is_forget(project: Project) -> None:
    project.apply(ONE)
    removed = "removed {\n  from = terraform_data.a\n  lifecycle {\n    destroy = false\n  }\n}\n"
    plan, _, said = project.plan(removed)
    (c,) = plan.changes
    assert (c.actions, c.action_class, c.is_destroy) == (("forget",), "forget", False)
    assert plan.destroys == () and plan.counts["forget"] == 1
    # OpenTofu prints the forget count; Terraform (through 1.11 at least) leaves it out.
    assert summary_line(plan) in {said, said.removesuffix(".") + ", 1 to forget."}
    assert summary_line(plan) == "Plan: 0 to add, 0 to change, 0 to destroy, 1 to forget."
    assert decide_apply(plan, frozenset()) == Apply(())


def test_count_shrink(project: Project) -> None:
    body = 'resource "terraform_data" "a" {{\n  count = {}\n  input = count.index\n}}\n'
    project.apply(body.format(3))
    plan, _, said = project.plan(body.format(1))
    assert [(c.address, c.reason) for c in plan.destroys] == [
        ("terraform_data.a[1]", "delete_because_count_index"),
        ("terraform_data.a[2]", "delete_because_count_index"),
    ]
    assert summary_line(plan) == said == "Plan: 0 to add, 0 to change, 2 to destroy."


def test_for_each_key_removal(project: Project) -> None:
    body = 'resource "terraform_data" "a" {{\n  for_each = toset({})\n  input = each.key\n}}\n'
    project.apply(body.format('["x", "y"]'))
    plan, _, said = project.plan(body.format('["x"]'))
    assert [(c.address, c.reason) for c in plan.destroys] == [('terraform_data.a["y"]', "delete_because_each_key")]
    assert decide_apply(plan, frozenset({'terraform_data.a["y"]'})) == Apply(('terraform_data.a["y"]',))
    assert summary_line(plan) == said


def test_deposed_object(project: Project) -> None:
    """A leftover from a failed create_before_destroy: forged into the state, then planned for deletion."""
    body = 'resource "terraform_data" "a" {\n  input = "x"\n  lifecycle {\n    create_before_destroy = true\n  }\n}\n'
    project.apply(body)
    state = json.loads(project.state.read_text())
    current = state["resources"][0]["instances"][0]
    leftover = {**current, "deposed": "0badf00d", "attributes": {**current["attributes"], "id": "old"}}
    state["resources"][0]["instances"].append(leftover)
    state["serial"] += 1
    project.state.write_text(json.dumps(state))
    plan, _, said = project.plan(body)
    (c,) = plan.destroys
    assert (c.address, c.deposed, c.actions) == ("terraform_data.a", "0badf00d", ("delete",))
    assert decide_apply(plan, frozenset({"terraform_data.a"})) == Block(
        ("1 of 1 to destroy not approved",), ("terraform_data.a (deposed 0badf00d)",)
    )
    assert isinstance(decide_apply(plan, frozenset({"terraform_data.a (deposed 0badf00d)"})), Apply)
    assert summary_line(plan) == said == "Plan: 0 to add, 0 to change, 1 to destroy."


def test_import_and_sensitive(project: Project) -> None:
    body = (
        'import {\n  to = terraform_data.i\n  id = "abc"\n}\nresource "terraform_data" "i" {}\n'
        'resource "terraform_data" "s" {\n  input = sensitive("hunter2")\n}\n'
    )
    plan, _, said = project.plan(body)
    by_address = {c.address: c for c in plan.changes}
    assert by_address["terraform_data.i"].importing is True
    assert by_address["terraform_data.s"].sensitive_values == ("hunter2",)
    assert "hunter2" in plan.sensitive_values
    assert summary_line(plan) == said == "Plan: 1 to import, 1 to add, 0 to change, 0 to destroy."


def test_destroy_mode(project: Project) -> None:
    project.apply(ONE)
    plan, _, said = project.plan(ONE, "-destroy")
    assert [c.address for c in plan.destroys] == ["terraform_data.a"]
    assert summary_line(plan) == said


def test_failed_plan_is_saved_errored_and_never_applied(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = (
        'variable "n" {\n  default = 2\n}\n'
        'resource "terraform_data" "ok" {\n  input = "y"\n}\n'
        'resource "terraform_data" "bad" {\n  input = "x"\n  lifecycle {\n    precondition {\n'
        '      condition     = var.n == 3\n      error_message = "n must be 3"\n    }\n  }\n}\n'
    )
    plan, data, said = project.plan(body, ok=False)
    assert summary_line(plan) == said == "Plan: 1 to add, 0 to change, 0 to destroy."  # what it got to
    assert project.run("plan", "-input=false", "-out=again.bin", ok=False).returncode == 1
    assert plan.errored is True
    assert plan.applyable in (False, None)  # OpenTofu does not write applyable
    assert verdict(plan).kind == "error"
    decision = decide_apply(plan, frozenset())
    assert isinstance(decision, Block) and decision.error is True
    assert gate_exit(tmp_path, data) == 2
    assert json.loads(capsys.readouterr().out)["verdict"] == "error"
