"""core.run_plan on a real terraform/tofu plan: a create, an update, a replace and a delete drawn
attribute by attribute, a secret shown as terraform marks it and masked wherever else it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.drift_diff import SENSITIVE, UNKNOWN
from core.render.mask import MASK
from core.results import ProjectResult
from core.run_plan import run_plan
from core.runs import Attribute
from tests.tfplans import Project

pytestmark = pytest.mark.slow

BEFORE = """
resource "terraform_data" "changed" {
  input = { size = 1, tags = { env = "prod" } }
}
resource "terraform_data" "replaced" {
  triggers_replace = "one"
  input            = "kept"
}
resource "terraform_data" "deleted" {
  input = ["a", "b"]
}
"""

AFTER = """
variable "pw" {
  type      = string
  default   = "hunter2-secret"
  sensitive = true
}
resource "terraform_data" "changed" {
  input = { size = 2, tags = { env = "prod" } }
}
resource "terraform_data" "replaced" {
  triggers_replace = "two"
  input            = "kept"
}
resource "terraform_data" "created" {
  input = var.pw
}
resource "terraform_data" "leaky" {
  input = "pw is ${nonsensitive(var.pw)}"
}
"""


def test_a_real_plan_is_drawn_attribute_by_attribute(tmp_path: Path, tf_env: dict[str, str]) -> None:
    project = Project(tmp_path, tf_env)
    project.apply(BEFORE)
    plan, data, _ = project.plan(AFTER)
    result = ProjectResult("app", ".", "default", "terraform", "a" * 40, plan)
    page = run_plan(result, source=data)
    assert page is not None
    drawn = {r.address: r for r in page.resources}
    assert [(r.address, r.action, r.gated) for r in page.resources] == [
        ("terraform_data.deleted", "delete", True),
        ("terraform_data.replaced", "replace", True),
        ("terraform_data.changed", "update", False),
        ("terraform_data.created", "create", False),
        ("terraform_data.leaky", "create", False),
    ]
    deleted = drawn["terraform_data.deleted"].attributes
    assert all(a.after is None for a in deleted)
    assert {a.path: a.before for a in deleted if a.path.startswith("input")} == {
        "input[0]": '"a"',
        "input[1]": '"b"',
    }
    assert {a.path: a.before for a in deleted if a.path.startswith("output")} == {
        "output[0]": '"a"',
        "output[1]": '"b"',
    }
    replaced = {a.path: a for a in drawn["terraform_data.replaced"].attributes}
    assert replaced["triggers_replace"] == Attribute("triggers_replace", '"one"', '"two"', forces_replacement=True)
    assert replaced["id"].after == UNKNOWN and not replaced["id"].forces_replacement
    assert "input" not in replaced  # unchanged, and not what forces the replacement
    assert drawn["terraform_data.changed"].attributes[0] == Attribute("input.size", "1", "2")
    created = {a.path: (a.before, a.after) for a in drawn["terraform_data.created"].attributes}
    assert created == {"input": (None, SENSITIVE), "id": (None, UNKNOWN), "output": (None, UNKNOWN)}
    assert drawn["terraform_data.leaky"].attributes[0] == Attribute("input", None, f'"pw is {MASK}"')
    assert b"hunter2-secret" in data and "hunter2" not in repr(page)
