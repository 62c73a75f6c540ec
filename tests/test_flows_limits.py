"""A change past the project limit is refused whole, with a report naming the count and the limit.

Flows awaited directly against the in-process stand-in (real Redis and git, no RQ): the PR's dispatch
and a merge group's. The limit is the server's PLANGATE_MAX_PROJECTS, lowered by `max_projects` in the
default branch's `.plangate.yml`; a PR's own `.plangate.yml` cannot raise it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from core.contract import APPLY_CONTEXT, DESTROY_CONTEXT, PLAN_CONTEXT, GroupRequest
from tests.flows import World, world_at
from workers.flows import merge_queue, pr_plan, push_apply

BASE = {"keep": "a"}
NEW = 'resource "terraform_data" "x" {}\n'


def _projects(n: int) -> dict[str, str | None]:
    return {f"p{i}/main.tf": NEW for i in range(n)}


def _limited(world: World, server: int) -> None:
    world.ctx = replace(world.ctx, settings=replace(world.ctx.settings, max_projects=server))


def test_a_pr_past_the_default_branchs_max_projects_is_refused_whole(tmp_path: Path, redis_url: str) -> None:
    with world_at(tmp_path, redis_url, BASE, {".plangate.yml": "version: 1\nmax_projects: 2\n"}) as world:
        raising = {".plangate.yml": "version: 1\nmax_projects: 100\n"}  # the PR's own config counts for nothing
        req = world.opened("wide", {**_projects(3), **raising})
        assert world.run(pr_plan.dispatch(world.ctx, req)) is None
        (comment,) = world.bot_bodies(req.pr)
        assert "this change affects 3 Terraform projects; plangate plans at most 2 for one change" in comment
        assert "`max_projects` in `.plangate.yml` on the default branch" in comment
        assert world.reports(req.sha) == {
            PLAN_CONTEXT: ("failure", "3 projects affected; the limit is 2"),
            DESTROY_CONTEXT: ("failure", "not planned: 3 projects affected; the limit is 2"),
        }
        within = world.opened("narrow", _projects(2))
        dispatched = world.run(pr_plan.dispatch(world.ctx, within))
        assert dispatched is not None and len(dispatched.projects) == 2


def test_the_servers_limit_holds_whatever_the_repository_asks(tmp_path: Path, redis_url: str) -> None:
    with world_at(tmp_path, redis_url, BASE, {".plangate.yml": "version: 1\nmax_projects: 100\n"}) as world:
        _limited(world, 2)
        req = world.opened("wide", _projects(3))
        assert world.run(pr_plan.dispatch(world.ctx, req)) is None
        (comment,) = world.bot_bodies(req.pr)
        assert "plans at most 2 for one change (this plangate's `PLANGATE_MAX_PROJECTS`)" in comment
        assert world.reports(req.sha)[PLAN_CONTEXT] == ("failure", "3 projects affected; the limit is 2")


def test_a_merge_group_past_the_limit_fails_both_checks_and_plans_nothing(tmp_path: Path, redis_url: str) -> None:
    with world_at(tmp_path, redis_url, BASE) as world:
        _limited(world, 2)
        base = world.gh.head(world.repo, "main")
        pr = world.opened("queued", _projects(3))
        assert base is not None
        group = GroupRequest(
            installation_id=pr.installation_id,
            repo_id=pr.repo_id,
            repo=pr.repo,
            clone_url=pr.clone_url,
            default_branch=pr.default_branch,
            head_sha=pr.sha,
            head_ref="refs/heads/gh-readonly-queue/main/pr-1",
            base_sha=base,
        )
        assert world.run(merge_queue.dispatch(world.ctx, group)) is None
        assert world.reports(pr.sha) == {
            PLAN_CONTEXT: ("failure", "3 projects affected; the limit is 2"),
            DESTROY_CONTEXT: ("failure", "3 projects affected; the limit is 2"),
        }


def test_a_merge_past_the_limit_applies_nothing_and_tells_its_pr(tmp_path: Path, redis_url: str) -> None:
    with world_at(tmp_path, redis_url, BASE) as world:
        _limited(world, 2)
        req = world.opened("wide", _projects(3))
        push = world.merged(world.pr(req.pr))
        assert world.run(push_apply.dispatch(world.ctx, push)) is None  # no project's apply is enqueued
        assert world.reports(push.after)[APPLY_CONTEXT] == ("failure", "3 projects affected; the limit is 2")
        assert any("plangate plans at most 2 for one change" in b for b in world.bot_bodies(req.pr))
