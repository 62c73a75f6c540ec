"""Jobs that may be run again from their start (plans, drift checks, commands).

A long GitHub rate-limit wait is handed to RQ's scheduler as a retry of the same job after that wait,
so no worker sits idle and the job's dependents keep waiting for it; a run that follows a dead
worker's is counted as recovered.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from rq import get_current_job

from core.contract import PLAN_RETRIES
from workers.adapters.github.client import RateLimited, deferrable
from workers.adapters.github.metrics import Recorder

P = ParamSpec("P")
R = TypeVar("R")


def reschedulable(func: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        job = get_current_job()
        token = deferrable.set(True)
        try:
            result = func(*args, **kwargs)
        except RateLimited as exc:
            if job is not None:
                job.retries_left = (job.retries_left or 0) + 1
                job.retry_intervals = [math.ceil(exc.wait)]
                Recorder(job.connection).job("deferred")
            raise
        finally:
            deferrable.reset(token)
        if job is not None and job.retries_left is not None and job.retries_left < PLAN_RETRIES:
            Recorder(job.connection).job("recovered")
        return result

    return run
