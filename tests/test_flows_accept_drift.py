"""`/accept-drift` driven directly (workers.flows.accept_drift): where it is answered, who may, and that a run
taken up again after its worker died never applies twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from rq import Queue

from core.contract import PLANS_QUEUE, CommandRequest, Jobs
from core.drift_schedule import DriftTarget
from core.projects import Project
from tests.e2e import BOT
from tests.flows import World, world_at
from workers.adapters.github.auth import installation_client
from workers.adapters.store import apply_phases, drift_issues
from workers.adapters.store.apply_phases import Phase
from workers.flows import accept_drift, drift
from workers.flows.outcome import Outcome


@dataclass
class Issue:
    world: World
    target: DriftTarget
    project: Project
    number: int

    def request(self, login: str = "bob", *, number: int | None = None, is_pr: bool = False) -> CommandRequest:
        return CommandRequest(
            **{k: getattr(self.target, k) for k in ("installation_id", "repo_id", "repo", "clone_url")},
            default_branch="main",
            number=self.number if number is None else number,
            is_pr=is_pr,
            comment_id=4321,
            commenter=login,
            commenter_type="User",
            command="accept-drift",
            issue_author=BOT,
        )

    def decide(self, req: CommandRequest) -> Outcome:
        ctx = self.world.ctx

        async def go() -> Outcome:
            async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
                return await accept_drift.decide(ctx, gh, req)

        return self.world.run(go())

    def inputs(self) -> dict[str, object]:
        doc = json.loads(self.world.state.read_text())
        return {r["name"]: r["instances"][0]["attributes"]["input"]["value"] for r in doc["resources"]}


@pytest.fixture
def issue(tmp_path: Path, redis_url: str) -> Iterator[Issue]:
    """A drift issue of project `infra`: its state edited by hand (state and code disagree)."""
    with world_at(tmp_path, redis_url, {"keep": "a"}) as world:
        world.gh.set_permission(world.repo, "rita", "read")
        doc = json.loads(world.state.read_text())
        doc["serial"] += 1
        doc["resources"][0]["instances"][0]["attributes"]["input"]["value"] = "edited"
        world.state.write_text(json.dumps(doc))
        assert world.repo.installation_id is not None
        target = DriftTarget(
            installation_id=world.repo.installation_id,
            repo_id=world.repo.id,
            repo=world.repo.full_name,
            clone_url=f"{world.ctx.settings.api_url}/{world.repo.full_name}.git",
            default_branch="main",
            project=None,
            schedule="@daily",
        )
        sha, (project,) = world.run(drift.projects_due(world.ctx, target))
        assert world.run(drift.check_project(world.ctx, target, project, sha)) == "drift"
        number = drift_issues.issue_of(world.ctx.redis, world.repo.id, project.name)
        assert number is not None
        yield Issue(world, target, project, number)


def test_accept_drift_works_only_in_a_drift_issue(issue: Issue) -> None:
    for req in (issue.request(number=7, is_pr=True), issue.request(number=issue.number + 100)):
        outcome = issue.decide(req)
        assert outcome.reaction == "confused" and outcome.accept is None
        assert "works only in an open drift issue plangate opened" in outcome.reply


def test_accept_drift_needs_the_right_to_approve_destroys(issue: Issue) -> None:
    refused = issue.decide(issue.request("rita"))
    assert refused.reaction == "-1" and refused.accept is None
    assert "@rita /accept-drift refused: @rita has read permission" in refused.reply
    allowed = issue.decide(issue.request("bob"))
    assert allowed.reaction == "+1" and "/accept-drift by @bob" in allowed.reply
    assert allowed.accept is not None
    target, project = allowed.accept
    assert (target.project, project) == (issue.project.name, issue.project)


def test_a_project_plangate_never_applies_is_never_written_by_accepting_drift(issue: Issue) -> None:
    drift_issues.watch(issue.world.ctx.redis, issue.target, replace(issue.project, apply_on_merge=False), issue.number)
    outcome = issue.decide(issue.request("bob"))
    assert outcome.accept is None and "`apply_on_merge: false`" in outcome.reply


def test_a_run_whose_worker_died_during_apply_is_reported_and_never_applied_again(issue: Issue) -> None:
    world, before = issue.world, len(issue.world.bot_bodies(issue.number))
    apply_phases.write(world.ctx.records, "run-1", Phase("applying"))
    req = issue.request()
    assert world.run(accept_drift.run(world.ctx, req, issue.target, issue.project, "run-1")) == "error"
    (said,) = world.bot_bodies(issue.number)[before:]
    assert "was lost during `terraform apply`" in said and "does not run it twice" in said
    assert issue.inputs() == {"keep": "edited"}
    assert world.run(accept_drift.run(world.ctx, req, issue.target, issue.project, "run-1")) == "error"
    assert len(world.bot_bodies(issue.number)) == before + 1, "reported once"
    checks = [j for j in Queue(PLANS_QUEUE, connection=world.ctx.redis).get_jobs() if j.func_name == Jobs.DRIFT_CHECK]
    assert len(checks) == 1, "a drift check says what the state holds now"


def test_a_run_whose_worker_died_before_applying_plans_afresh_and_applies_no_code(issue: Issue) -> None:
    world, before = issue.world, len(issue.world.bot_bodies(issue.number))
    apply_phases.write(world.ctx.records, "run-2", Phase("planning"))
    assert world.run(accept_drift.run(world.ctx, issue.request(), issue.target, issue.project, "run-2")) == "noop"
    (said,) = world.bot_bodies(issue.number)[before:]
    assert "Nothing to accept in `infra`" in said
    assert issue.inputs() == {"keep": "edited"}, "the code's value was not applied"


def test_accept_drift_refreshes_the_apply_branch_head_not_the_default_branch(issue: Issue) -> None:
    """With `apply_branch: production`, reality is recorded against the code plangate applies (production's
    head), never the default branch's: another region or provider there could read resources as gone."""
    world = issue.world
    production = world.gh.commit(world.repo, "production", {"README.md": "production\n"}, author="alice")
    main = world.gh.commit(
        world.repo, "main", {".plangate.yml": "version: 1\napply_branch: production\n"}, author="alice"
    )
    assert production != main
    before = len(world.bot_bodies(issue.number))
    world.run(accept_drift.run(world.ctx, issue.request(), issue.target, issue.project, "run-3"))
    (said,) = world.bot_bodies(issue.number)[before:]
    assert f"at {production[:7]}" in said and main[:7] not in said
