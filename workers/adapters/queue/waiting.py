"""The flows' door to RQ beyond the entry points: a queued job cancelled before it starts, a job
scheduled once for later."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

import redis
from rq import Queue
from rq.exceptions import DuplicateJobError, NoSuchJobError
from rq.job import Job, JobStatus

from plumbing.job_options import OPTIONS

Cancelled = Literal["cancelled", "started", "missing"]


def cancel_if_queued(conn: redis.Redis, job_id: str) -> Cancelled:
    """Cancel the job while it still waits in its queue: "cancelled"; "started" when it already runs or
    ended; "missing" when there is no such job."""
    try:
        job = Job.fetch(job_id, connection=conn)
    except NoSuchJobError:
        return "missing"
    if job.get_status() != JobStatus.QUEUED:
        return "started"
    job.cancel()
    return "cancelled"


def schedule_once(
    conn: redis.Redis, queue: str, func: str, kwargs: dict[str, Any], *, job_id: str, delay: timedelta
) -> bool:
    """`func(**kwargs)` on `queue` after `delay`, with the options of its kind, unless a job `job_id`
    exists already (then False)."""
    options = OPTIONS[func].enqueue_args()
    try:
        Queue(queue, connection=conn).enqueue_in(delay, func, kwargs=kwargs, job_id=job_id, unique=True, **options)
    except DuplicateJobError:
        return False
    return True
