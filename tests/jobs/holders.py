"""A job as RQ sees one while it runs (a dispatch planning in place, an apply), for the slot tests."""

from __future__ import annotations

import redis
from rq import Queue
from rq.job import Job, JobStatus


def running_job(conn: redis.Redis, what: str) -> Job:
    """A started job on a queue no test worker takes jobs from: it holds what it takes until told."""
    job = Queue("plangate-test-slot-holders", connection=conn).enqueue("builtins.len", what)
    job.set_status(JobStatus.STARTED)
    return job
