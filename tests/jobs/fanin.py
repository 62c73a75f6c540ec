"""A publish stand-in that reports what it waited for (for tests/test_fanout.py)."""

from __future__ import annotations

from rq import get_current_job
from rq.job import Job, JobStatus


def statuses(job_ids: list[str]) -> list[JobStatus | None]:
    """The status of each job of `job_ids` when this job runs."""
    this = get_current_job()
    assert this is not None
    return [job.get_status(refresh=False) for job in Job.fetch_many(job_ids, connection=this.connection) if job]
