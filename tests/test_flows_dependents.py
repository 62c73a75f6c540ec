"""workers.flows.dependents driven directly: which held applies a successful apply releases."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rq import Queue

from core.apply_outcome import ApplyOutcome, Ending
from core.contract import PLANS_QUEUE, ApplyConversation, Jobs
from core.projects import Project
from tests.flows import World, world_at
from tests.tfproject import main_tf
from workers.adapters.store import waiting_applies
from workers.adapters.store.waiting_applies import WaitingApply
from workers.flows import dependents

BASE = {"keep": "a"}
NET, APP = Project("net", "net"), Project("app", "app")
WHERE = ApplyConversation(number=1, is_pr=True, authors=("alice",), approved_on=None)


@pytest.fixture
def world(tmp_path: Path, redis_url: str) -> Iterator[World]:
    with world_at(tmp_path, redis_url, BASE) as made:
        yield made


def _applies(world: World) -> list[str]:
    """The projects of the apply jobs waiting in the queue."""
    queue = Queue(PLANS_QUEUE, connection=world.ctx.redis)
    return [job.kwargs["project"].name for job in queue.get_jobs() if job.func_name == Jobs.APPLY_PROJECT]


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
    (job,) = Queue(PLANS_QUEUE, connection=world.ctx.redis).get_jobs()[:1]
    assert job.kwargs["push"] == second and job.kwargs["where"] == WHERE  # as it was held: its commit, its approvals
    assert job.kwargs["waits"]["app"] == ("dns",)  # net is applied now; dns is read again at its SHA
    assert waiting_applies.held_by(world.ctx.records, world.repo.id, "net") == []
    world.run(dependents.release(world.ctx, third, NET, ApplyOutcome(Ending.APPLIED)))  # said again: nothing more
    assert _applies(world) == ["app"]
