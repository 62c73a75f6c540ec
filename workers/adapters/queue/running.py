"""The RQ job this process runs, as a flow needs it: its id (what its results are kept under, and the
holder of the slots it takes), the time its timeout leaves, and how long its result is kept."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from rq import get_current_job
from rq.job import Job


@dataclass(frozen=True)
class Running:
    job: Job

    @property
    def id(self) -> str:
        return self.job.id

    def seconds_left(self) -> float | None:
        """What the job's timeout leaves of its run (None: no timeout)."""
        assert self.job.started_at is not None, "runs as an RQ job"
        if self.job.timeout is None:
            return None
        return self.job.timeout - (datetime.now(UTC) - self.job.started_at).total_seconds()

    def keep_result(self, ttl: int) -> None:
        """RQ keeps this job's result `ttl` seconds once it finishes."""
        self.job.result_ttl = ttl


def this_job() -> Running:
    job = get_current_job()
    assert job is not None, "runs as an RQ job"
    return Running(job)


def current_job_id() -> str | None:
    """The id of the RQ job this process runs, if any (a flow driven directly, as in tests, runs in none)."""
    job = get_current_job()
    return None if job is None else job.id
