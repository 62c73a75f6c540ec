"""Smart re-planning, one dispatch at a time: a push re-plans the projects whose inputs changed and
carries the others forward, destroys included; commands, applies and bad records re-plan.

Real Redis, git and terraform in this process (tests/flows.py); the end-to-end story with RQ workers and
approvals is in test_e2e_carry.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from core import redis_keys
from core.contract import DESTROY_CONTEXT, PLAN_CONTEXT, PlanRequest
from core.results import ProjectResult
from core.trigger import Trigger, Why
from tests.flows import World, world_at
from tests.tfproject import main_tf
from workers.adapters.store import applies as apply_store
from workers.adapters.store import gates as gate_store
from workers.flows import pr_publish

BASE = {"keep": "a", "doomed": "b"}
OTHER = 'module "tags" {\n  source = "../modules/tags"\n}\n\nresource "terraform_data" "one" {\n  input = "1"\n}\n'
TAGS = 'output "team" {\n  value = "platform"\n}\n'


@pytest.fixture
def world(tmp_path: Path, redis_url: str) -> Iterator[World]:
    with world_at(tmp_path, redis_url, BASE, {"other/main.tf": OTHER, "modules/tags/main.tf": TAGS}) as made:
        yield made


def _planned(world: World, req: PlanRequest) -> dict[str, ProjectResult]:
    """Dispatch, plan and publish as the jobs do; dir → result."""
    planned = world.plan_pr(req)
    assert planned is not None
    world.run(pr_publish.publish(world.ctx, *planned, world.made))
    return {r.dir: r for r in planned[1]}


def _opened(world: World) -> tuple[PlanRequest, dict[str, ProjectResult]]:
    files: dict[str, str | None] = {
        "infra/main.tf": main_tf(world.state, {"keep": "a"}),  # destroys `doomed`
        "other/main.tf": OTHER + 'resource "terraform_data" "two" {}\n',
    }
    req = world.opened("change", files)
    return req, _planned(world, req)


def test_a_push_replans_what_it_changed_and_carries_the_rest_with_its_destroys(world: World) -> None:
    first, results = _opened(world)
    assert {d: r.carried_from for d, r in results.items()} == {"infra": None, "other": None}

    second = world.pushed(world.pr(first.pr), {"other/main.tf": OTHER + 'resource "terraform_data" "three" {}\n'})
    results = _planned(world, second)
    assert results["infra"].carried_from == first.sha and results["other"].carried_from is None
    assert results["infra"].sha == second.sha and results["infra"].plan is not None
    assert "terraform_data.three" in results["other"].plan_text

    (comment,) = world.bot_bodies(first.pr)
    assert f"carried from `{first.sha[:7]}`" in comment and second.sha[:7] in comment
    assert "2 projects planned (1 carried forward: no input changed since their plan)" in comment
    assert "terraform_data.doomed" in comment  # the carried plan keeps its destroy ...
    record = gate_store.load_plan(world.ctx.records, world.repo.id, first.pr, second.sha)
    assert record is not None and list(record.gates["infra@default:infra"]) == ["terraform_data.doomed"]
    assert world.reports(second.sha)[DESTROY_CONTEXT][0] == "failure"  # ... and needs approving at this SHA
    assert world.reports(second.sha)[PLAN_CONTEXT][0] == "success"


def test_a_push_that_changes_no_input_carries_every_plan(world: World) -> None:
    first, _ = _opened(world)
    second = world.pushed(world.pr(first.pr), {"README.md": "words\n"})
    results = _planned(world, second)
    assert {d: r.carried_from for d, r in results.items()} == {"infra": first.sha, "other": first.sha}
    third = world.pushed(world.pr(first.pr), {"README.md": "more words\n"})
    results = _planned(world, third)  # carried twice: still named after the SHA it was made at
    assert {d: r.carried_from for d, r in results.items()} == {"infra": first.sha, "other": first.sha}


def test_a_changed_local_module_replans_the_project_using_it(world: World) -> None:
    first, _ = _opened(world)
    second = world.pushed(world.pr(first.pr), {"modules/tags/main.tf": TAGS.replace("platform", "infra")})
    results = _planned(world, second)
    assert {d: r.carried_from for d, r in results.items()} == {"infra": first.sha, "other": None}


def test_an_apply_on_main_since_the_last_plan_replans_the_project(world: World) -> None:
    first, _ = _opened(world)
    apply_store.set_applied(world.ctx.records, world.repo.id, "infra@default:infra", "f" * 40)
    second = world.pushed(world.pr(first.pr), {"README.md": "words\n"})
    results = _planned(world, second)
    assert {d: r.carried_from for d, r in results.items()} == {"infra": None, "other": first.sha}


def test_plan_commands_and_rerun_presses_replan_everything(world: World) -> None:
    first, _ = _opened(world)
    for trigger in (Trigger(Why.COMMAND, "7"), Trigger(Why.RERUN, "abc")):
        results = _planned(world, replace(first, trigger=trigger))
        assert {d: r.carried_from for d, r in results.items()} == {"infra": None, "other": None}


def test_a_last_plans_record_that_does_not_verify_carries_nothing(world: World) -> None:
    first, _ = _opened(world)
    key = redis_keys.last_plans(world.repo.id, first.pr)
    sealed = world.ctx.redis.get(key)
    assert isinstance(sealed, bytes)
    world.ctx.redis.set(key, sealed.replace(b"infra", b"other"))
    second = world.pushed(world.pr(first.pr), {"README.md": "words\n"})
    results = _planned(world, second)
    assert {d: r.carried_from for d, r in results.items()} == {"infra": None, "other": None}
