"""A failed apply's issue across pushes, flows driven directly: a lost run opens it, a run that died during
`terraform apply` rewrites it (never a second issue), a push that changes no project stays red, and an
apply of the project that succeeds closes it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from uuid import uuid4

import pytest

from core.apply_outcome import ApplyOutcome, Ending
from core.contract import APPLY_CONTEXT, CommandRequest, PushRequest
from core.projects import Project
from core.render.failed_apply import FAILED_LABEL
from core.render.lost import KILLED
from standin.state import Issue
from tests.e2e import BASE, BOT
from tests.flows import World, world_at
from tests.tfproject import main_tf
from workers.adapters.github.auth import installation_client
from workers.adapters.store import failed_applies
from workers.adapters.store.apply_phases import Phase
from workers.adapters.store.failed_applies import FailedApply
from workers.flows import apply_command, apply_project, push_apply
from workers.flows import failed_applies as failed_flow
from workers.flows.outcome import Outcome


@pytest.fixture
def world(tmp_path: Path, redis_url: str) -> Iterator[World]:
    with world_at(tmp_path, redis_url, BASE) as made:
        yield made


def _merge(
    world: World, branch: str, files: dict[str, str | None]
) -> tuple[PushRequest, push_apply.AppliesToRun | None]:
    req = world.opened(branch, files)
    push = world.merged(world.pr(req.pr))
    return push, world.run(push_apply.dispatch(world.ctx, push))


def _issues(world: World) -> list[Issue]:
    return [i for (rid, _), i in sorted(world.gh.state.issues.items()) if rid == world.repo.id]


def test_one_issue_per_project_until_an_apply_of_it_succeeds(world: World) -> None:
    lost, found = _merge(world, "one", {"infra/main.tf": main_tf(world.state, {**BASE, "one": "1"})})
    assert found is not None
    (project,) = found.projects
    where = found.where(lost)
    world.run(push_apply.finish(world.ctx, lost, where, [(project, None, KILLED)], found.projects))
    (issue,) = _issues(world)
    assert issue.title == f"plangate: apply of infra failed at {lost.after[:7]}" and issue.labels == [FAILED_LABEL]
    assert "lost before `terraform apply` began" in (issue.body or "")
    state, said = world.reports(lost.after)[APPLY_CONTEXT]
    assert state == "failure" and "apply lost before it started in infra" in said

    died, found = _merge(world, "two", {"infra/main.tf": main_tf(world.state, {**BASE, "one": "1", "two": "2"})})
    assert found is not None
    applying = [(project, Phase("applying"), KILLED)]
    world.run(push_apply.finish(world.ctx, died, found.where(died), applying, found.projects))
    (same,) = _issues(world)
    assert same.number == issue.number and same.title.endswith(died.after[:7]) and same.state == "open"
    assert "stopped during `terraform apply`" in (same.body or "")
    assert any("failed again" in b for b in world.bot_bodies(issue.number))
    recorded = failed_applies.of_project(world.ctx.redis, world.repo.id, project.identity)
    assert recorded is not None and recorded.sha == died.after and recorded.number == issue.number

    docs, nothing = _merge(world, "docs", {"README.md": "words\n"})
    assert nothing is None
    assert world.reports(docs.after)[APPLY_CONTEXT] == ("failure", f"last apply failed in infra — see #{issue.number}")

    fixed, found = _merge(world, "three", {"infra/main.tf": main_tf(world.state, {**BASE, "three": "3"})})
    assert found is not None
    run = apply_project.run(world.ctx, fixed, project, found.where(fixed), uuid4().hex)
    assert world.run(run) == "applied"
    world.run(push_apply.finish(world.ctx, fixed, found.where(fixed), [], found.projects))
    (closed,) = _issues(world)
    assert closed.state == "closed" and any("succeeded" in b for b in world.bot_bodies(issue.number))
    assert world.reports(fixed.after)[APPLY_CONTEXT][0] == "success"
    assert failed_applies.of_repo(world.ctx.redis, world.repo.id) == []


def _apply_in(world: World, number: int, login: str = "bob") -> Outcome:
    assert world.repo.installation_id is not None
    req = CommandRequest(
        installation_id=world.repo.installation_id,
        repo_id=world.repo.id,
        repo=world.repo.full_name,
        clone_url=f"{world.ctx.settings.api_url}/{world.repo.full_name}.git",
        default_branch="main",
        number=number,
        is_pr=False,
        comment_id=98765,
        commenter=login,
        commenter_type="User",
        command="apply",
        issue_author=BOT,
    )

    async def go() -> Outcome:
        async with installation_client(world.ctx.tokens, req.installation_id, world.ctx.settings.api_url) as gh:
            return await apply_command.decide(world.ctx, gh, req)

    return world.run(go())


def test_apply_in_the_issue_acts_on_the_project_as_the_branch_head_declares_it_now(world: World) -> None:
    """The failure's record keeps the project as it was: a project since set to `apply_on_merge: false` (or
    removed) is not applied by `/apply` in its old issue."""
    project, sha = Project("infra", "infra"), world.gh.head(world.repo, "main") or ""
    failed = FailedApply(project, sha, 77, "main", ("alice",), world.repo.full_name, "")
    failed_applies.record(world.ctx.redis, world.repo.id, failed)
    assert _apply_in(world, 77).reapply, "as recorded, it is applied"
    off = "version: 1\nprojects:\n  - name: infra\n    dir: infra\n    apply_on_merge: false\n"
    world.gh.commit(world.repo, "main", {".plangate.yml": off}, author="alice")
    refused = _apply_in(world, 77)
    assert not refused.reapply and "`apply_on_merge: false`" in refused.reply
    gone = "version: 1\nprojects:\n  - name: other\n    dir: infra\n"
    world.gh.commit(world.repo, "main", {".plangate.yml": gone}, author="alice")
    refused = _apply_in(world, 77)
    assert not refused.reapply and "is no longer a project" in refused.reply


def test_an_apply_of_an_older_commit_than_the_one_that_failed_leaves_the_failure_open(world: World) -> None:
    """An apply that waited its project's turn (or an `/apply` that read the head before a push) can end after
    a newer push's apply failed: it leaves the newer change unapplied, so the issue stays open and red."""
    lost, found = _merge(world, "one", {"infra/main.tf": main_tf(world.state, {**BASE, "one": "1"})})
    assert found is not None
    (project,) = found.projects
    where = found.where(lost)
    world.run(push_apply.finish(world.ctx, lost, where, [(project, None, KILLED)], found.projects))
    (issue,) = _issues(world)
    older = replace(lost, after=lost.before)
    outcomes = {project.name: ApplyOutcome(Ending.NOOP)}

    async def go() -> tuple[str, str]:
        async with installation_client(world.ctx.tokens, lost.installation_id, world.ctx.settings.api_url) as gh:
            return await failed_flow.after_apply(world.ctx, gh, older, where, [project], outcomes, {})

    state, _ = world.run(go())
    (still,) = _issues(world)
    assert still.state == "open" and not any("succeeded" in b for b in world.bot_bodies(issue.number))
    recorded = failed_applies.of_project(world.ctx.redis, world.repo.id, project.identity)
    assert recorded is not None and recorded.sha == lost.after
    assert state == "failure"


def test_an_older_commit_never_applies_over_a_newer_ones_failed_apply(world: World) -> None:
    """A newer push's apply that failed may have applied part of its change: an older commit's apply (one
    that waited its turn, an `/apply` that read the head before that push) would undo it, ungated for an
    update, and clear the newer change's authors. It is superseded, like one older than an applied push."""
    push, found = _merge(world, "one", {"infra/main.tf": main_tf(world.state, {**BASE, "one": "1"})})
    assert found is not None
    (project,) = found.projects
    newer = world.gh.commit(world.repo, "main", {"infra/main.tf": main_tf(world.state, {**BASE, "two": "2"})})
    failed = FailedApply(project, newer, 99, "main", ("carol",), world.repo.full_name, "")
    failed_applies.record(world.ctx.redis, world.repo.id, failed)
    assert (
        world.run(apply_project.run(world.ctx, push, project, found.where(push), uuid4().hex)) == "superseded"
    )  # its change is not applied: dependents wait
    assert "one" not in world.state.read_text()
