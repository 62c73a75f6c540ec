"""Facts the destroy gate reads from real terraform/tofu plans (terraform_data only, no network): which
object a destroy acts on (object_digest), and every name it had (previous_address)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.plan import ResourceChange
from tests.tfplans import Project

pytestmark = pytest.mark.slow

ONE = 'resource "terraform_data" "x" {\n  input = "a"\n}\n'
MOVED = "moved {{\n  from = {0}\n  to   = {1}\n}}\n"


@pytest.fixture
def project(tmp_path: Path, tf_env: dict[str, str]) -> Project:
    return Project(tmp_path, tf_env)


def other_project(tmp_path: Path, tf_env: dict[str, str]) -> Project:
    root = tmp_path / "other"
    root.mkdir()
    return Project(root, tf_env)


def the_destroy(project: Project, body: str, *extra: str) -> ResourceChange:
    plan, _, _ = project.plan(body, *extra)
    (destroy,) = plan.destroys
    return destroy


def test_same_object_planned_twice_has_the_same_digest(project: Project) -> None:
    project.apply(ONE)
    first = the_destroy(project, ONE, "-destroy")
    again = the_destroy(project, ONE, "-destroy")
    assert first == again and len(first.object_digest) == 32
    removed = the_destroy(project, "")  # deleted another way: the object is the same, so is its digest
    assert removed.object_digest == first.object_digest


def test_same_address_in_another_state_is_another_object(
    project: Project, tmp_path: Path, tf_env: dict[str, str]
) -> None:
    """The PR's plan is re-made under the same head SHA after main switched the backend (staging →
    production): same address, same config, another real object, so another digest."""
    staging, production = project, other_project(tmp_path, tf_env)
    staging.apply(ONE)
    production.apply(ONE)
    in_staging = the_destroy(staging, ONE, "-destroy")
    in_production = the_destroy(production, ONE, "-destroy")
    assert in_staging.address == in_production.address == "terraform_data.x"
    assert in_staging.object_digest != in_production.object_digest
    staging.state = production.state  # the same checkout, its backend now pointing at production
    staging.configure(ONE)
    staging.run("init", "-reconfigure", "-input=false", "-no-color")
    assert the_destroy(staging, ONE, "-destroy").object_digest == in_production.object_digest


def test_count_zero_on_a_resource_without_count(project: Project) -> None:
    """Observed (terraform 1.11.4): adding `count = 0` moves `terraform_data.x` to `terraform_data.x[0]`
    implicitly and deletes that: address `terraform_data.x[0]`, previous_address `terraform_data.x`,
    actions ["delete"], reason delete_because_count_index; the text says "(moved from terraform_data.x)"."""
    project.apply(ONE)
    before = the_destroy(project, ONE, "-destroy").object_digest
    gone = the_destroy(project, ONE.replace("{\n", "{\n  count = 0\n", 1))
    assert (gone.address, gone.previous_address, gone.actions) == (
        "terraform_data.x[0]",
        "terraform_data.x",
        ("delete",),
    )
    assert gone.reason == "delete_because_count_index"
    assert gone.object_digest == before  # the object, whatever its name


def test_count_one_is_only_a_move(project: Project) -> None:
    """Observed: `count = 1` is the same implicit move, `["no-op"]`: no destroy."""
    project.apply(ONE)
    plan, _, _ = project.plan(ONE.replace("{\n", "{\n  count = 1\n", 1))
    (moved,) = plan.changes
    assert (moved.address, moved.previous_address, moved.actions) == (
        "terraform_data.x[0]",
        "terraform_data.x",
        ("no-op",),
    )
    assert plan.destroys == ()


def test_moved_then_removed_from_config(project: Project) -> None:
    """Observed: `moved { from = terraform_data.x  to = terraform_data.y }` with no `terraform_data.y` in
    the config deletes `terraform_data.y` (previous_address `terraform_data.x`, reason
    delete_because_no_move_target): the destroy carries both names."""
    project.apply(ONE)
    gone = the_destroy(project, MOVED.format("terraform_data.x", "terraform_data.y"))
    assert (gone.address, gone.previous_address, gone.actions) == ("terraform_data.y", "terraform_data.x", ("delete",))
    assert gone.reason == "delete_because_no_move_target"


def test_moved_then_count_zero(project: Project) -> None:
    """Observed: moved to `terraform_data.y` which has `count = 0`: `terraform_data.y` is deleted
    (previous_address `terraform_data.x`, reason delete_because_wrong_repetition); moved to
    `terraform_data.y[0]` instead: `terraform_data.y[0]` is deleted (reason delete_because_count_index)."""
    project.apply(ONE)
    counted = ONE.replace('"x"', '"y"').replace("{\n", "{\n  count = 0\n", 1)
    gone = the_destroy(project, MOVED.format("terraform_data.x", "terraform_data.y") + counted)
    assert (gone.address, gone.previous_address, gone.reason) == (
        "terraform_data.y",
        "terraform_data.x",
        "delete_because_wrong_repetition",
    )
    gone = the_destroy(project, MOVED.format("terraform_data.x", "terraform_data.y[0]") + counted)
    assert (gone.address, gone.previous_address, gone.reason) == (
        "terraform_data.y[0]",
        "terraform_data.x",
        "delete_because_count_index",
    )


def test_for_each_added_deletes_the_old_name_without_a_move(project: Project) -> None:
    """Observed: `for_each` on a resource that had none is no implicit move: `terraform_data.x` is deleted
    under its own name (no previous_address, reason delete_because_wrong_repetition) and each key
    created; an empty `for_each` only deletes."""
    project.apply(ONE)
    plan, _, _ = project.plan(ONE.replace("{\n", '{\n  for_each = toset(["k"])\n', 1))
    facts = [(c.address, c.previous_address, c.actions, c.reason) for c in plan.changes]
    assert sorted(facts) == [
        ("terraform_data.x", None, ("delete",), "delete_because_wrong_repetition"),
        ('terraform_data.x["k"]', None, ("create",), None),
    ]
    gone = the_destroy(project, ONE.replace("{\n", "{\n  for_each = toset([])\n", 1))
    assert (gone.address, gone.previous_address, gone.reason) == (
        "terraform_data.x",
        None,
        "delete_because_wrong_repetition",
    )
