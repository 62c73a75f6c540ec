"""Enqueue jobs by dotted name with plain-value arguments and deterministic ids.

The web process never imports the job code: RQ stores the function's dotted path, so the
request path stays small and a worker upgrade does not need a web restart.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from prometheus_client import Histogram
from rq import Callback, Queue, Retry
from rq.exceptions import DuplicateJobError

ENQUEUE_SECONDS = Histogram(
    "plangate_enqueue_seconds",
    "Time to enqueue one job on Redis",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25),
)

# Commands first: a person is waiting for the reaction to their comment.
COMMANDS_QUEUE = "plangate-commands"
PLANS_QUEUE = "plangate-plans"
QUEUE_NAMES = (COMMANDS_QUEUE, PLANS_QUEUE)
# A plan has no side effect, so a plan job whose worker died is run again, at most twice. An apply
# is never re-run by itself; neither is a command (its reply would be posted twice).
PLAN_RETRIES = 2
RERUN_PLANS = frozenset({"workers.jobs.plan_pr"})
COUNT_ABANDONED = "workers.rq_worker.count_abandoned"


@dataclass(frozen=True)
class Enqueued:
    job_id: str
    duplicate: bool


def enqueue_once(
    queue: Queue, func: str, job_id: str, kwargs: dict[str, Any], *, timeout: int = 3 * 3600, result_ttl: int = 3600
) -> Enqueued:
    """Enqueue unless a job with this id already exists (a redelivery or duplicate event)."""
    started = time.perf_counter()
    rerun = func in RERUN_PLANS
    try:
        queue.enqueue(
            func,
            kwargs=kwargs,
            job_id=job_id,
            unique=True,
            job_timeout=timeout,
            result_ttl=result_ttl,
            retry=Retry(max=PLAN_RETRIES) if rerun else None,
            on_failure=Callback(COUNT_ABANDONED) if rerun else None,
        )
    except DuplicateJobError:
        return Enqueued(job_id, duplicate=True)
    finally:
        ENQUEUE_SECONDS.observe(time.perf_counter() - started)
    return Enqueued(job_id, duplicate=False)
