"""plangate's RQ worker: RQ's, plus a count of work horses that died (the job is re-run if it may be)."""

from __future__ import annotations

import importlib
import sys
from contextlib import suppress
from typing import Any

from rq import Worker
from rq.job import Job

from workers.adapters.github.metrics import Recorder

# httpx imports its transport (httpcore, h11) and anyio its asyncio backend on the first request:
# importing them once here spares every forked work horse ~50 ms.
LAZY_IMPORTS = ("httpcore", "h11", "anyio._backends._asyncio")
MAINTENANCE_INTERVAL = 60  # seconds: jobs of a worker that died are found (and re-run) within ~2.5 minutes
# A job's git thread starts the fetch while the event loop's thread builds GitHub requests; at CPython's
# 5 ms default each of the thread's few system calls could wait that long for the GIL before git starts.
GIL_SWITCH_INTERVAL = 0.0005


class PlangateWorker(Worker):
    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
        Recorder(self.connection).job("abandoned")
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)  # type: ignore[no-untyped-call]


def count_abandoned(job: Job, connection: Any, kind: type, value: BaseException, traceback: Any) -> None:
    """RQ's failure callback: a job found started by a worker that is gone (RQ re-runs it if it may)."""
    if kind.__name__ == "AbandonedJobError":
        Recorder(connection).job("abandoned")


def preload() -> None:
    """Import what libraries would load on first use, before the worker forks its work horses, and
    hand the GIL over sooner (inherited by every work horse)."""
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    for name in LAZY_IMPORTS:
        with suppress(ImportError):  # a library that reorganised its internals only costs speed
            importlib.import_module(name)
