"""plangate's RQ worker: RQ's, plus a count of work horses that died (the job is re-run if it may be)."""

from __future__ import annotations

from typing import Any

from rq import Worker
from rq.job import Job

from workers.adapters.github.metrics import Recorder

MAINTENANCE_INTERVAL = 60  # seconds: jobs of a worker that died are found (and re-run) within ~2.5 minutes


class PlangateWorker(Worker):
    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
        Recorder(self.connection).job("abandoned")
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]


def count_abandoned(job: Job, connection: Any, kind: type, value: BaseException, traceback: Any) -> None:
    """RQ's failure callback: a job found started by a worker that is gone (RQ re-runs it if it may)."""
    if kind.__name__ == "AbandonedJobError":
        Recorder(connection).job("abandoned")
