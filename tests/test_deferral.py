"""A long rate-limit wait is handed to RQ's scheduler: no worker sits idle, dependents keep waiting."""

from __future__ import annotations

import datetime as dt

import redis
from rq import Queue, Worker
from rq.job import Dependency, JobStatus
from rq.registry import ScheduledJobRegistry


def test_a_long_wait_reschedules_the_same_job_and_its_dependents_wait(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test-deferral", connection=redis_conn)
    job = queue.enqueue("tests.jobs.limited.limited_once", 120.0)
    after = queue.enqueue("builtins.len", "x", depends_on=Dependency(jobs=[job.id]))
    Worker([queue], connection=redis_conn).work(burst=True)
    job.refresh()  # type: ignore[no-untyped-call]
    assert job.get_status() == JobStatus.SCHEDULED and job.meta["runs"] == 1
    when = ScheduledJobRegistry(queue=queue).get_scheduled_time(job)  # type: ignore[no-untyped-call]
    assert dt.timedelta(seconds=100) < when - dt.datetime.now(dt.UTC) <= dt.timedelta(seconds=121)
    assert after.get_status() == JobStatus.DEFERRED  # still waiting for the same job, not failed over
    assert int(redis_conn.hget("plangate:metrics:jobs", "deferred") or 0) == 1
