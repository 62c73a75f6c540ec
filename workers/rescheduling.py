"""Jobs that may be run again from their start (plans, publishes, commands, an apply's dispatch).

A long GitHub rate-limit wait is handed to RQ's scheduler as a retry of the same job after that wait,
so no worker sits idle and the job's dependents keep waiting for it. So is an outage: once one
request's retries (PLANGATE_GITHUB_RETRY_SECONDS) are spent, the job comes back later, a little
later each time, until PLANGATE_OUTAGE_WINDOW has passed since the outage first stopped it; then it
fails for good and its last word is said (workers.watchdog). A run that follows a dead worker's is
counted as recovered.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from rq import get_current_job
from rq.job import Job

from core.contract import PLAN_RETRIES
from core.render.lost import OUTAGE
from plumbing.job_options import GAVE_UP
from workers.adapters.github.client import RateLimited, deferrable, outage
from workers.adapters.github.metrics import Recorder
from workers.context import context

P = ParamSpec("P")
R = TypeVar("R")
OUTAGE_SINCE = "plangate_outage_since"  # job.meta: when an outage first stopped this job
OUTAGE_TRIES = "plangate_outage_tries"
LONGEST_PAUSE = 300.0  # seconds between two comebacks, at most: GitHub back, reports within ~5 min


def reschedulable(func: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        job = get_current_job()
        token = deferrable.set(True)
        try:
            result = func(*args, **kwargs)
        except RateLimited as exc:
            if job is not None:
                _again_after(job, exc.wait)
                Recorder(job.connection).job("deferred")
            raise
        except Exception as exc:
            if job is not None and outage(exc):
                through_outage(job)
            raise
        finally:
            deferrable.reset(token)
        if job is not None and job.retries_left is not None and job.retries_left < PLAN_RETRIES:
            Recorder(job.connection).job("recovered")
        return result

    return run


def through_outage(job: Job) -> None:
    """Bring `job` back after a pause (doubling from one request's retry budget), unless the outage
    window has passed since the outage first stopped it: then it fails for good."""
    settings = context().settings
    now = time.time()
    since = float(job.meta.setdefault(OUTAGE_SINCE, now))
    tries = int(job.meta.get(OUTAGE_TRIES, 0))
    left = settings.outage_window - (now - since)
    if left <= 0:
        job.retries_left = 0  # a killed horse's re-runs are not for outages
        job.meta[GAVE_UP] = OUTAGE
    else:
        job.meta[OUTAGE_TRIES] = tries + 1
        _again_after(job, min(settings.github_retry_seconds * 2**tries, LONGEST_PAUSE, left))
        Recorder(job.connection).job("outage")
    job.save_meta()  # type: ignore[no-untyped-call]


def _again_after(job: Job, wait: float) -> None:
    job.retries_left = (job.retries_left or 0) + 1
    job.retry_intervals = [max(1, math.ceil(wait))]
