"""plangate's RQ worker: RQ's, tuned so that a dead worker's jobs are found within about a minute and
a half (idle or busy), a killed work horse's job still gets its last word (workers.watchdog), and a
Redis that came back empty is noticed: the worker registers again and looks for lost work."""

from __future__ import annotations

import importlib
import sys
from contextlib import suppress
from typing import Any

from rq import Queue, Worker
from rq.job import Job

from core.contract import PLANS_QUEUE, Jobs
from core.render.lost import KILLED
from plumbing.job_options import OPTIONS
from workers import watchdog
from workers.adapters.github.metrics import Recorder
from workers.adapters.queue.fanout import not_ended

# httpx imports its transport (httpcore, h11) and anyio its asyncio backend on the first request:
# importing them once here, before the forks, spares every work horse that import.
LAZY_IMPORTS = ("httpcore", "h11", "anyio._backends._asyncio")
# An idle worker waits on the queues for WORKER_TTL - 15 s and runs maintenance (which finds the jobs
# of dead workers) at most every MAINTENANCE_INTERVAL once its wait returns; a busy worker renews its
# job every JOB_MONITORING_INTERVAL, and the job counts as abandoned HEARTBEAT_GRACE after a missed one.
# A job whose worker vanished is found within 10 + 20 + 15 + 15 + 15 = 75 s.
WORKER_TTL = 30
MAINTENANCE_INTERVAL = 15
JOB_MONITORING_INTERVAL = 10
HEARTBEAT_GRACE = 20
EPOCH = "plangate:epoch"  # set while Redis holds plangate's data; gone after a restart without it
RECOVER = "recover-lost-work"
# A job's git thread starts the fetch while the event loop's thread builds GitHub requests; at CPython's
# 5 ms default each of the thread's few system calls could wait that long for the GIL before git starts.
GIL_SWITCH_INTERVAL = 0.0005


class PlangateWorker(Worker):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("worker_ttl", WORKER_TTL)
        kwargs.setdefault("maintenance_interval", MAINTENANCE_INTERVAL)
        kwargs.setdefault("job_monitoring_interval", JOB_MONITORING_INTERVAL)
        super().__init__(*args, **kwargs)
        self._seen_epoch = False  # has this worker seen Redis holding plangate's records?

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """RQ's ttl is the interval + 60 s: a dead busy worker's job would stay "started" that long."""
        interval = int(self.job_monitoring_interval)
        if job.timeout and job.timeout > 0:
            return int(min(float(job.timeout) - working_time, interval)) + HEARTBEAT_GRACE
        return interval + HEARTBEAT_GRACE

    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
        Recorder(self.connection).job("abandoned")
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]
        watchdog.owed(self.connection, job, KILLED)  # RQ calls no failure callback for a killed horse

    def run_maintenance_tasks(self) -> None:
        if self.last_cleaned_at is not None and not self.connection.hexists(self.key, "birth"):
            self.log.warning("Redis lost this worker's registration (restarted without its data): registering again")
            self.connection.delete(self.key)  # heartbeats since wrote a partial one
            self.register_birth()
            if self.scheduler is not None:
                self.scheduler.acquire_locks(auto_start=True)
        if self.connection.set(EPOCH, "1", nx=True) and self._seen_epoch:
            # Redis came back without plangate's records: what was in flight is found again from GitHub.
            self.log.warning("Redis lost plangate's records: looking for lost work on GitHub")
            if not not_ended(self.connection, RECOVER):
                Queue(PLANS_QUEUE, connection=self.connection).enqueue(
                    Jobs.RECOVER_LOST_WORK, job_id=RECOVER, **OPTIONS[Jobs.RECOVER_LOST_WORK].enqueue_args()
                )
        self._seen_epoch = True
        super().run_maintenance_tasks()  # type: ignore[no-untyped-call]


def preload() -> None:
    """Import what libraries would load on first use, before the worker forks its work horses, and
    hand the GIL over sooner (inherited by every work horse)."""
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    for name in LAZY_IMPORTS:
        with suppress(ImportError):  # a library that reorganised its internals only costs speed
            importlib.import_module(name)
