"""The web process's side of enqueueing: core.contract's enqueue, timed for `/metrics`.

The web process never imports the job code: RQ stores the function's dotted path, so the request
path stays small and a worker upgrade does not need a web restart.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Histogram
from rq import Queue

from core.enqueue import Enqueued, enqueue_once

ENQUEUE_SECONDS = Histogram(
    "plangate_enqueue_seconds",
    "Time to enqueue one job on Redis",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25),
)


def enqueue_timed(queue: Queue, func: str, job_id: str, request: Any, *, result_ttl: int = 3600) -> Enqueued:
    started = time.perf_counter()
    try:
        return enqueue_once(queue, func, job_id, request, result_ttl=result_ttl)
    finally:
        ENQUEUE_SECONDS.observe(time.perf_counter() - started)
