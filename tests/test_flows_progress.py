"""A multi-project PR plan's progress in its plan comment (workers.flows.plan_progress), one step at a
time against the in-process stand-in (real Redis, git and terraform, no RQ): what it writes and when,
that it never writes for one project, for an older SHA or after the publish began, and that the
publish always has the last word, even when a progress edit runs at the same moment."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from core import redis_keys
from core.contract import CommentChange, PlanRequest
from core.projects import Project
from core.results import ProjectResult
from core.runs import run_id
from tests.e2e import progress
from tests.flows import World, world_at
from workers.adapters.github import vcs
from workers.adapters.store import plan_progress as store
from workers.adapters.store import written
from workers.flows import plan_progress, pr_plan, pr_publish, pr_runner, restore

URL = "https://gate.example.org"
NAMES = ("net", "app", "db")


def _tf(value: str) -> str:
    return f'resource "terraform_data" "one" {{\n  input = "{value}"\n}}\n'


@pytest.fixture
def world(tmp_path: Path, redis_url: str) -> Iterator[World]:
    with world_at(tmp_path, redis_url, {"keep": "a"}, {f"{n}/main.tf": _tf("1") for n in NAMES}) as made:
        made.ctx = replace(made.ctx, settings=replace(made.ctx.settings, public_url=URL))
        yield made


def _decided(world: World, req: PlanRequest) -> tuple[PlanRequest, list[Project]]:
    decided = world.run(pr_runner.decide(world.ctx, req))
    assert decided is not None
    return decided.request, decided.projects


def _opened(world: World, names: tuple[str, ...] = NAMES) -> tuple[PlanRequest, list[Project], dict[str, str]]:
    """A PR changing `names`, dispatched; its projects and the (made-up) jobs planning them."""
    req, projects = _decided(world, world.opened("change", {f"{n}/main.tf": _tf("2") for n in names}))
    jobs = {p.identity: f"job-{p.name}" for p in projects}
    return req, projects, jobs


def _comment_writes(world: World) -> list[Any]:
    return [r for r in world.gh.state.requests if r.method in ("POST", "PATCH") and "/comments" in r.path]


def _next_turn(world: World, req: PlanRequest) -> None:
    """As if PROGRESS_EVERY seconds had passed since the last progress edit."""
    world.ctx.redis.delete(redis_keys.progress_turn(req.repo_id, req.pr))


def _plans(world: World, req: PlanRequest, projects: list[Project]) -> list[ProjectResult]:
    return [world.run(pr_plan.plan_project(world.ctx, req, p)) for p in projects]


def _publish(world: World, req: PlanRequest, projects: list[Project]) -> None:
    world.run(pr_publish.publish(world.ctx, req, _plans(world, req, projects)))


def test_the_comment_shows_progress_then_the_plan(world: World) -> None:
    req, projects, jobs = _opened(world)
    assert sorted(p.name for p in projects) == sorted(NAMES)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    (body,) = world.bot_bodies(req.pr)
    assert progress(body) and "Planning 3 projects at" in body and "0 of 3 done" in body
    for p in projects:
        assert f"{URL}/runs/{run_id(jobs[p.identity], p.identity)}" in body

    first = projects[0]
    world.run(plan_progress.done(world.ctx, req, first.identity, jobs[first.identity]))
    assert "0 of 3 done" in world.bot_bodies(req.pr)[0]  # within the turn: no edit
    _next_turn(world, req)
    second = projects[1]
    world.run(plan_progress.done(world.ctx, req, second.identity, jobs[second.identity]))
    (body,) = world.bot_bodies(req.pr)
    assert "2 of 3 done" in body
    assert run_id(jobs[first.identity], first.identity) not in body  # done: no longer listed
    assert f"{URL}/runs/{run_id(jobs[projects[2].identity], projects[2].identity)}" in body
    assert len(_comment_writes(world)) == 2  # "0 of 3", then "2 of 3"

    _publish(world, req, projects)
    (body,) = world.bot_bodies(req.pr)
    assert not progress(body) and "3 projects planned" in body
    assert len(_comment_writes(world)) == 3  # never a new comment: one posted, then edited

    _next_turn(world, req)
    world.run(plan_progress.done(world.ctx, req, projects[2].identity, jobs[projects[2].identity]))
    assert not progress(world.bot_bodies(req.pr)[0]) and len(_comment_writes(world)) == 3  # after: nothing


def test_a_plan_done_by_another_job_than_the_one_recorded_does_not_count(world: World) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    _next_turn(world, req)
    world.run(plan_progress.done(world.ctx, req, projects[0].identity, "an-earlier-dispatchs-job"))
    assert "0 of 3 done" in world.bot_bodies(req.pr)[0]
    handed = {projects[1].identity: "its-own-job"}  # a batch handed it on: its own job plans it now
    plan_progress.handed_on(world.ctx, req, handed)
    _next_turn(world, req)
    world.run(plan_progress.done(world.ctx, req, projects[1].identity, "its-own-job"))
    assert "1 of 3 done" in world.bot_bodies(req.pr)[0]


def test_only_an_edit_reads_the_whole_progress(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PR of N projects must not read N entries at the end of each of its N plans: a plan that ends
    within the turn of the last edit reads none of them."""
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    loads: list[object] = []
    load = store.load

    def counting(*args: Any) -> store.Progress | None:
        loads.append(args)
        return load(*args)

    monkeypatch.setattr(store, "load", counting)
    for p in projects[:2]:
        world.run(plan_progress.done(world.ctx, req, p.identity, jobs[p.identity]))
    assert loads == [] and "0 of 3 done" in world.bot_bodies(req.pr)[0]
    _next_turn(world, req)
    world.run(plan_progress.done(world.ctx, req, projects[2].identity, jobs[projects[2].identity]))
    assert len(loads) == 1 and "3 of 3 done" in world.bot_bodies(req.pr)[0]


def test_a_forged_progress_record_gets_no_edit(world: World) -> None:
    req, projects, jobs = _opened(world)
    world.ctx.redis.set(redis_keys.progress(req.repo_id, req.pr, req.sha), '{"x@default": "forged"}')
    world.run(plan_progress.done(world.ctx, req, projects[0].identity, jobs[projects[0].identity]))
    assert world.bot_bodies(req.pr) == [] and _comment_writes(world) == []


def test_a_single_project_plan_shows_no_progress(world: World) -> None:
    req, projects, jobs = _opened(world, ("net",))
    assert len(projects) == 1
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    world.run(plan_progress.done(world.ctx, req, projects[0].identity, jobs[projects[0].identity]))
    assert world.bot_bodies(req.pr) == [] and _comment_writes(world) == []


def test_a_newer_push_stops_the_older_shas_progress(world: World) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    newer, _ = _decided(world, world.pushed(world.pr(req.pr), {"net/main.tf": _tf("3")}))
    assert newer.sha != req.sha
    _next_turn(world, req)
    world.run(plan_progress.done(world.ctx, req, projects[0].identity, jobs[projects[0].identity]))
    (body,) = world.bot_bodies(req.pr)
    assert "0 of 3 done" in body and req.sha in body and len(_comment_writes(world)) == 1


def test_a_sha_already_published_gets_no_progress_over_its_plan(world: World) -> None:
    """`/plan` again at the same SHA: its plan stays shown (approvals of it still count) until the new one."""
    req, projects, _ = _opened(world)
    _publish(world, req, projects)
    writes = len(_comment_writes(world))
    world.run(plan_progress.start(world.ctx, req, projects, {p.identity: "again" for p in projects}))
    assert not progress(world.bot_bodies(req.pr)[0]) and len(_comment_writes(world)) == writes


def test_a_progress_edit_while_the_publish_holds_the_comment_writes_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    planned = _plans(world, req, projects)
    real = pr_publish._comment_and_reports
    inside, writes_inside = asyncio.Event(), []

    async def held(*args: Any) -> vcs.Published:
        inside.set()
        await asyncio.sleep(0.5)  # the publish holds the comment: a progress edit tries meanwhile
        writes_inside.append(len(_comment_writes(world)))
        return await real(*args)

    monkeypatch.setattr(pr_publish, "_comment_and_reports", held)

    async def race() -> None:
        publishing = asyncio.create_task(pr_publish.publish(world.ctx, req, list(planned)))
        await inside.wait()
        for p in projects:
            _next_turn(world, req)
            await plan_progress.done(world.ctx, req, p.identity, jobs[p.identity])
        await publishing

    world.run(race())
    assert writes_inside == [1]  # only the "0 of 3" before the publish
    (body,) = world.bot_bodies(req.pr)
    assert not progress(body) and "3 projects planned" in body


def test_a_progress_edit_in_flight_when_the_publish_begins_lands_before_the_plan(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    planned = _plans(world, req, projects)
    real = vcs.upsert_comments
    sending, order = asyncio.Event(), []

    async def slow(*args: Any, bodies: list[str], **kwargs: Any) -> vcs.Published:
        if progress(bodies[0]):
            sending.set()
            await asyncio.sleep(1.0)  # GitHub is slow to answer the progress edit
        answer = await real(*args, bodies=bodies, **kwargs)
        order.append("progress" if progress(bodies[0]) else "plan")
        return answer

    monkeypatch.setattr(vcs, "upsert_comments", slow)

    async def race() -> None:
        _next_turn(world, req)
        editing = asyncio.create_task(
            plan_progress.done(world.ctx, req, projects[0].identity, jobs[projects[0].identity])
        )
        await sending.wait()
        await pr_publish.publish(world.ctx, req, list(planned))  # begins while the progress edit is in flight
        await editing

    world.run(race())
    assert order == ["progress", "plan"]
    (comment,) = [c for c in world.gh.comments_on(world.repo, req.pr) if c.user.login.endswith("[bot]")]
    assert not progress(comment.body) and "3 projects planned" in comment.body
    assert [progress(e.body) for e in comment.edits] == [True, True]  # "0 of 3", "1 of 3", then the plan
    assert store.published(world.ctx.records, req.repo_id, req.pr, req.sha)


def test_a_progress_comment_changed_by_someone_else_is_put_back_as_plangate_last_wrote_it(world: World) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    (comment,) = world.gh.comments_on(world.repo, req.pr)
    ours = comment.body
    world.gh.edit_comment(comment, "## plangate plan\n\n0 to destroy", editor="alice", deliver=False)
    change = CommentChange(**req.target(), number=req.pr, comment_id=comment.id, action="edited", by="alice")
    assert world.run(restore.on_change(world.ctx, change)) == "restored"
    (body,) = world.bot_bodies(req.pr)
    assert progress(body) and body.endswith(ours.partition("\n")[2]) and "@alice edited this comment" in body

    _publish(world, req, projects)
    was = written.lookup(world.ctx.records, req.repo_id, comment.id)
    assert was is not None and not progress(was.body) and was.body == world.bot_bodies(req.pr)[0]


def test_a_progress_edit_github_refuses_fails_nothing(world: World) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    (comment,) = world.gh.comments_on(world.repo, req.pr)
    world.gh.faults.add("PATCH", f"/repos/{world.repo.full_name}/issues/comments/{comment.id}", status=422, times=1)
    _next_turn(world, req)
    world.run(plan_progress.done(world.ctx, req, projects[0].identity, jobs[projects[0].identity]))  # no raise
    assert "0 of 3 done" in world.bot_bodies(req.pr)[0]
    assert not world.ctx.redis.exists(redis_keys.comment_lock(req.repo_id, req.pr))  # given back all the same
    _publish(world, req, projects)
    assert "3 projects planned" in world.bot_bodies(req.pr)[0]


def test_a_publish_that_lost_the_comments_id_finds_the_progress_comment_and_edits_it(world: World) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    world.ctx.redis.delete(redis_keys.comments(req.repo_id, req.pr, "plan"))  # Redis lost which comment it is
    _publish(world, req, projects)
    (body,) = world.bot_bodies(req.pr)  # the progress comment, found by its marker and edited: no second one
    assert not progress(body) and "3 projects planned" in body


def test_the_plan_of_an_older_sha_is_replaced_by_the_newer_shas_progress_then_its_plan(world: World) -> None:
    req, projects, _ = _opened(world)
    _publish(world, req, projects)
    assert req.sha[:7] in world.bot_bodies(req.pr)[0]
    newer, again = _decided(world, world.pushed(world.pr(req.pr), {f"{n}/main.tf": _tf("3") for n in NAMES}))
    assert len(again) == 3
    world.run(plan_progress.start(world.ctx, newer, again, {p.identity: "job-new" for p in again}))
    (body,) = world.bot_bodies(req.pr)
    assert progress(body) and f"at `{newer.sha[:7]}`: 0 of 3 done" in body and req.sha not in body
    _publish(world, newer, again)
    (body,) = world.bot_bodies(req.pr)
    assert not progress(body) and newer.sha[:7] in body and "3 projects planned" in body
    assert len(_comment_writes(world)) == 3  # the first plan, the newer progress, the newer plan


@asynccontextmanager
async def _unlocked(ctx: object, req: object) -> AsyncIterator[None]:
    yield


def test_a_restore_waits_for_a_publish_and_never_puts_older_text_over_the_plan(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    req, projects, jobs = _opened(world)
    world.run(plan_progress.start(world.ctx, req, projects, jobs))
    (comment,) = world.gh.comments_on(world.repo, req.pr)
    world.gh.edit_comment(comment, "## plangate plan\n\n0 to destroy", editor="alice", deliver=False)
    change = CommentChange(**req.target(), number=req.pr, comment_id=comment.id, action="edited", by="alice")
    lock = redis_keys.comment_lock(req.repo_id, req.pr)
    world.ctx.redis.set(lock, "a publish", ex=60)  # a publish is editing the comment
    with ThreadPoolExecutor(1) as pool:
        restoring = pool.submit(world.run, restore.on_change(world.ctx, change))  # read the progress text
        time.sleep(0.5)
        assert not restoring.done()  # it waits for the comment
        monkeypatch.setattr(plan_progress, "publishing", _unlocked)  # the lock is the test's own
        _publish(world, req, projects)
        world.ctx.redis.delete(lock)  # the publish is done
        assert restoring.result(timeout=60) == "as plangate wrote it"
    (body,) = world.bot_bodies(req.pr)
    assert "3 projects planned" in body and not progress(body)
