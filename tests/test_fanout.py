"""A PR of hundreds of projects: its plans go in batches, and the publish waits for every one through a
tree of joins (RQ reads the status of all of a job's dependencies each time one of them ends, so one
wide join is O(N²))."""

from __future__ import annotations

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from rq import Queue, SimpleWorker
from rq.job import Job, JobStatus

from core.contract import PLANS_QUEUE, Jobs, PlanRequest
from core.inputs import LastPlan
from core.projects import Project
from plumbing.job_options import OPTIONS
from workers.adapters.queue import fanout
from workers.flows.carry import Carried


def _waits_on(job: Job) -> list[Job]:
    found = Job.fetch_many(job.dependency_ids, connection=job.connection)
    assert all(found), "a job waits on a job that is gone"
    return [j for j in found if j is not None]


def test_a_publish_after_many_jobs_waits_through_joins_of_at_most_fan_in(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fanout, "FAN_IN", 4)  # the same tree as at 32, with fewer jobs to run
    queue = Queue("plangate-test-fanout", connection=redis_conn)
    many = 2 * fanout.FAN_IN * fanout.FAN_IN + 3  # two levels of joins
    ids = [queue.enqueue("builtins.len", "x").id for _ in range(many - 1)]
    ids.append(queue.enqueue("builtins.int", "not a number").id)  # one plan fails: the publish still runs
    publish = queue.enqueue(
        "tests.jobs.fanin.statuses", kwargs={"job_ids": ids}, depends_on=fanout.all_ended(queue, ids)
    )
    leaves: list[str] = []
    level = [publish]
    while level:
        below = []
        for job in level:
            waits = _waits_on(job) if job.dependency_ids else []
            assert len(waits) <= fanout.FAN_IN
            leaves += [j.id for j in waits if j.func_name != Jobs.JOINED]
            below += [j for j in waits if j.func_name == Jobs.JOINED]
        level = below
    assert sorted(leaves) == sorted(ids)  # every job is waited for, once

    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    assert publish.get_status() == JobStatus.FINISHED
    seen = publish.return_value()
    assert seen is not None and len(seen) == many
    assert set(seen) == {JobStatus.FAILED, JobStatus.FINISHED}  # all had ended before it ran


def test_up_to_fan_in_jobs_the_publish_waits_on_them_directly(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test-fanout", connection=redis_conn)
    ids = [queue.enqueue("builtins.len", "x").id for _ in range(fanout.FAN_IN)]
    waited = fanout.all_ended(queue, ids)
    assert waited is not None and waited.dependencies == ids and waited.allow_failure
    assert queue.count == fanout.FAN_IN  # no join job
    assert fanout.all_ended(queue, []) is None


def test_a_join_runs_as_soon_as_its_jobs_end_not_after_the_jobs_queued_behind_them(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fanout, "FAN_IN", 4)
    queue = Queue("plangate-test-fanout", connection=redis_conn)
    jobs = [queue.enqueue("builtins.len", "x") for _ in range(9)]
    waited = fanout.all_ended(queue, [j.id for j in jobs])
    assert waited is not None and isinstance(waited.dependencies[0], str)
    first_join = Job.fetch(waited.dependencies[0], connection=redis_conn)
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    first_join.refresh()  # type: ignore[no-untyped-call]
    jobs[4].refresh()  # type: ignore[no-untyped-call]
    assert first_join.started_at is not None and jobs[4].started_at is not None
    assert first_join.started_at < jobs[4].started_at  # ran once jobs 0-3 ended, ahead of job 4


def test_a_publish_runs_as_soon_as_its_jobs_end_ahead_of_work_queued_since(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test-fanout", connection=redis_conn)
    plans = [queue.enqueue("builtins.len", "x") for _ in range(2)]
    publish = queue.enqueue("builtins.len", "x", depends_on=fanout.all_ended(queue, [p.id for p in plans]))
    later = [queue.enqueue("builtins.len", "x") for _ in range(3)]  # another PR's plans, queued meanwhile
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    publish.refresh()  # type: ignore[no-untyped-call]
    later[0].refresh()  # type: ignore[no-untyped-call]
    assert publish.started_at is not None and later[0].started_at is not None
    assert publish.started_at < later[0].started_at


def test_a_fallback_publish_is_enqueued_once_per_run_of_its_planner(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(OPTIONS, "builtins.dict", OPTIONS[Jobs.PUBLISH_PLAN])  # a publish that only ends
    queue = Queue("plangate-test-fanout", connection=redis_conn)
    planner = queue.enqueue("builtins.len", "x")
    fixed = f"{planner.id}-fallback"

    def publish(version: int) -> None:
        fanout._publish_after(queue, [planner.id], "builtins.dict", {"version": version}, fixed_id=fixed)

    publish(1)
    publish(2)  # the planner's worker died and RQ ran it again: its fallback publish is still waiting for it
    assert Job.fetch(fixed, connection=redis_conn).kwargs == {"version": 1}
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    assert Job.fetch(fixed, connection=redis_conn).get_status() == JobStatus.FINISHED
    publish(3)  # the same planner id, run again much later: an ended fallback publish is not one
    assert Job.fetch(fixed, connection=redis_conn).kwargs == {"version": 3}


@given(projects=st.integers(min_value=0, max_value=3000), workers=st.integers(min_value=0, max_value=64))
def test_batches_cover_every_project_once_large_first_and_end_small(projects: int, workers: int) -> None:
    sizes = fanout.batch_sizes(projects, workers)
    assert sum(sizes) == projects
    assert all(1 <= size <= fanout.MAX_BATCH for size in sizes)
    assert sizes == sorted(sizes, reverse=True)  # the last jobs are the smallest: the workers end together
    if projects > 2 * max(1, workers):
        assert sizes[-1] == 1
    if projects <= 2 * max(1, workers):
        assert sizes == [1] * projects  # as many jobs as projects: each worker gets some


def test_two_hundred_projects_on_two_workers_take_a_tenth_of_the_jobs() -> None:
    sizes = fanout.batch_sizes(200, 2)
    assert len(sizes) <= 25, sizes  # one job per project would pay RQ's hop between jobs 200 times
    assert fanout.batch_sizes(3, 1) == [2, 1]


def test_a_fallback_publish_reports_the_plans_its_planner_carries_forward(redis_conn: redis.Redis) -> None:
    planner = Queue(PLANS_QUEUE, connection=redis_conn).enqueue("builtins.len", "x")
    target = (1, 2, "acme/infra", "https://example.test/acme/infra.git", "main")
    request = PlanRequest(*target, pr=3, sha="b" * 40, author="a")
    kept = [Carried(Project("other", "other"), LastPlan("f", "job-1", "c" * 40))]
    try:
        fanout.enqueue_fallback_publish(redis_conn, request, planner.id, Project("infra", "infra"), kept)
        fallback = Job.fetch(f"{planner.id}-fallback", connection=redis_conn)
        assert fallback.kwargs["carried"] == kept and fallback.kwargs["fallback"] is True  # if the planner dies
        assert fallback.kwargs["project"] == Project("infra", "infra")
    finally:
        for job in Job.fetch_many([planner.id, f"{planner.id}-fallback"], connection=redis_conn):
            if job is not None:
                job.delete()
