"""workers.flows.dependents driven directly: which held applies a successful apply releases."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rq import Queue
from rq.job import Job

from core.apply_order import Holdup
from core.apply_outcome import ApplyOutcome, Ending
from core.contract import PLANS_QUEUE, ApplyConversation, Jobs
from core.projects import Project
from tests.flows import World, world_at
from tests.tfproject import main_tf
from workers.adapters.store import waiting_applies
from workers.adapters.store.waiting_applies import WaitingApply
from workers.flows import apply_project, dependents, push_apply

BASE = {"keep": "a"}
NET, APP = Project("net", "net"), Project("app", "app")
WHERE = ApplyConversation(number=1, is_pr=True, authors=("alice",), approved_on=None)


@pytest.fixture
def world(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> Iterator[World]:
    with world_at(tmp_path, redis_url, BASE) as made:  # redis_conn: an empty Redis, emptied afterwards
        yield made


def _applies(world: World) -> list[str]:
    """The projects of the apply jobs enqueued, in order (queued, or waiting for their project's slot)."""
    conn = world.ctx.redis
    ids = [key.decode().removeprefix("rq:job:") for key in conn.scan_iter("rq:job:*") if key.count(b":") == 2]
    jobs = [job for job in Job.fetch_many(ids, connection=conn) if job and job.func_name == Jobs.APPLY_PROJECT]
    return [job.kwargs["project"].name for job in sorted(jobs, key=lambda j: j.created_at or 0)]


def test_only_a_success_at_the_held_commit_or_a_newer_one_releases(world: World) -> None:
    first = world.merged(world.pr(world.opened("one", {"infra/main.tf": main_tf(world.state, {"k": "1"})}).pr))
    second = world.merged(world.pr(world.opened("two", {"infra/main.tf": main_tf(world.state, {"k": "2"})}).pr))
    third = world.merged(world.pr(world.opened("three", {"infra/main.tf": main_tf(world.state, {"k": "3"})}).pr))
    held = WaitingApply(second, APP, WHERE, "net", {"app": ("net", "dns"), "net": (), "dns": ()})
    waiting_applies.record(world.ctx.records, held)

    for ending in (Ending.FAILED, Ending.WAITING, Ending.NOT_APPLIED, Ending.ERROR):
        world.run(dependents.release(world.ctx, second, NET, ApplyOutcome(ending)))
    world.run(dependents.release(world.ctx, second, APP, ApplyOutcome(Ending.APPLIED)))  # not what it waits on
    world.run(dependents.release(world.ctx, first, NET, ApplyOutcome(Ending.APPLIED)))  # older: net's change not in
    assert _applies(world) == [] and waiting_applies.held_by(world.ctx.records, world.repo.id, "net") == [held]

    world.run(dependents.release(world.ctx, third, NET, ApplyOutcome(Ending.NOOP)))
    assert _applies(world) == ["app"]
    (job,) = Queue(PLANS_QUEUE, connection=world.ctx.redis).get_jobs()[:1]  # its slot was free: queued
    assert job.kwargs["push"] == second and job.kwargs["where"] == WHERE  # as it was held: its commit, its approvals
    assert job.kwargs["waits"]["app"] == ("dns",)  # net is applied now; dns is read again at its SHA
    assert waiting_applies.held_by(world.ctx.records, world.repo.id, "net") == []
    world.run(dependents.release(world.ctx, third, NET, ApplyOutcome(Ending.APPLIED)))  # said again: nothing more
    assert _applies(world) == ["app"]


def test_a_dependent_held_after_its_dependency_was_fixed_is_released_at_once(world: World) -> None:
    """app, held at the first commit by net's failure there, is released by net's later success; and when
    net's success came before app's record (its release found nothing), app's own wait sees it and goes on."""
    first = world.merged(world.pr(world.opened("one", {"infra/main.tf": main_tf(world.state, {"k": "1"})}).pr))
    second = world.merged(world.pr(world.opened("two", {"infra/main.tf": main_tf(world.state, {"k": "2"})}).pr))
    waits = {"app": ("net",), "net": ()}
    held_back = Holdup("net", "failed", "net", "failed")
    where = ApplyConversation(number=1, is_pr=True, authors=("alice",), approved_on=None)

    waiting_applies.succeeded(world.ctx.records, world.repo.id, "net", first.before)  # older than the first
    outcome = world.run(dependents.wait(world.ctx, first, APP, where, waits, held_back))
    assert outcome == ApplyOutcome(Ending.WAITING) and _applies(world) == []
    assert any("waiting on net (failed)" in body for body in world.bot_bodies(1))

    world.run(dependents.release(world.ctx, second, NET, ApplyOutcome(Ending.APPLIED)))
    assert _applies(world) == ["app"]  # the record was there: released by net's success

    world.run(dependents.wait(world.ctx, first, APP, where, waits, held_back))  # recorded after that success
    assert _applies(world) == ["app", "app"]
    assert waiting_applies.held_by(world.ctx.records, world.repo.id, "net") == []


def test_a_held_apply_run_again_still_waits_on_what_did_not_apply_at_its_commit(world: World) -> None:
    """An approval of a held apply, or `/plan` on it, runs it again without the push's order (the held
    record does not carry it): it reads the order kept for the push, so a dependency that failed there
    still holds it instead of it being applied first."""
    opened = world.opened("one", {"infra/main.tf": main_tf(world.state, {**BASE, "k": "1"})})
    push = world.merged(world.pr(opened.pr))
    infra = Project("infra", "infra")
    where = ApplyConversation(number=opened.pr, is_pr=True, authors=("alice",), approved_on=opened.sha)
    waiting_applies.save_order(world.ctx.records, world.repo.id, push.after, {"net": (), "infra": ("net",)})
    push_apply.record_outcome(world.ctx, push, "net", ApplyOutcome(Ending.FAILED))

    assert world.run(apply_project.run(world.ctx, push, infra, where, "run-again")) == "waiting"
    assert [w.project.name for w in waiting_applies.held_by(world.ctx.records, world.repo.id, "net")] == ["infra"]
    assert waiting_applies.order_at(world.ctx.records, world.repo.id, "f" * 40) == {}  # none kept: nothing waits
