"""workers.flows.apply_decision: which limits a merge's apply holds, from the merged PR's published plan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from core.change_rules import MAX_DESTROYS, MAX_PROJECTS, limit_gate
from core.config import ChangeLimits, RepoConfig
from core.contract import ApplyConversation
from core.gated import Gated
from core.projects import Project
from tests.flows import World, world_at
from tests.tfproject import main_tf
from workers.adapters.store import gates as gate_store
from workers.adapters.store import waiting_applies
from workers.flows import apply_decision

LIMITS = RepoConfig(change_limits=ChangeLimits(max_destroys=1, max_projects=1, approvals=2, users=("carol",)))
NET = Project("net", "net")
DOOMED = {"terraform_data.doomed": Gated("terraform_data.doomed", "o" * 32, action="delete")}


@pytest.fixture
def world(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> Iterator[World]:
    with world_at(tmp_path, redis_url, {"keep": "a"}) as made:
        yield made


def _held(world: World, record: gate_store.PlanRecord | None, branch: str = "one") -> set[str]:
    opened = world.opened(branch, {"infra/main.tf": main_tf(world.state, {"k": branch})})
    req = world.merged(world.pr(opened.pr))
    where = ApplyConversation(number=opened.pr, is_pr=True, authors=("alice",), approved_on=opened.sha)
    if record is not None:
        gate_store.save_plan(world.ctx.records, req.repo_id, opened.pr, opened.sha, record)
    found = apply_decision._limits_of_the_pr(world.ctx, req, NET, where, LIMITS, dict(DOOMED))
    for key, gated in found.items():  # bound as the PR's plan bound it: an approval given there still covers it
        assert gated == limit_gate(key, LIMITS.change_limits, NET.identity, DOOMED, gated.what)  # type: ignore[arg-type]
    return set(found)


def test_a_prs_plan_within_the_limits_holds_none(world: World) -> None:
    assert _held(world, gate_store.PlanRecord({NET.identity: dict(DOOMED)}, [])) == set()


def test_without_the_prs_whole_plan_every_limit_the_project_counts_towards_is_held(world: World) -> None:
    """Redis lost the record, or a project's plan failed on the PR (so it counted nothing there): the
    other projects' part is unknown, so the limits fail closed instead of the project alone deciding."""
    assert _held(world, None) == {MAX_DESTROYS, MAX_PROJECTS}
    failed = gate_store.PlanRecord({NET.identity: dict(DOOMED)}, ["dns@default:dns"])
    assert _held(world, failed, "two") == {MAX_DESTROYS, MAX_PROJECTS}


def test_a_direct_push_is_judged_by_the_projects_it_affects(world: World) -> None:
    """No PR, no published plan: a push affecting more projects than max_projects holds that limit in each,
    and one affecting several holds max_destroys in each with destroys (the others' are unknown)."""
    opened = world.opened("one", {"infra/main.tf": main_tf(world.state, {"k": "1"})})
    req = world.merged(world.pr(opened.pr))
    where = ApplyConversation(number=None, is_pr=False, authors=("alice",), approved_on=None)

    def held(affected: dict[str, tuple[str, ...]] | None, gates: dict[str, Gated]) -> set[str]:
        world.ctx.redis.delete(*world.ctx.redis.keys("plangate:apply-order:*") or ["none"])
        if affected is not None:
            waiting_applies.save_order(world.ctx.records, req.repo_id, req.after, affected)
        return set(apply_decision._limits_of_the_pr(world.ctx, req, NET, where, LIMITS, gates))

    assert held({"net": ()}, dict(DOOMED)) == set()  # alone: only what the project alone passes
    assert held({"net": (), "dns": ()}, dict(DOOMED)) == {MAX_DESTROYS, MAX_PROJECTS}
    assert held({"net": (), "dns": ()}, {}) == {MAX_PROJECTS}  # no destroys here: none counted
    assert held(None, dict(DOOMED)) == set()  # nothing kept: the project alone decides
