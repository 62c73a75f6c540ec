"""The web process's side of enqueueing: the jobs of deliveries handled together go in one write.

Deliveries that arrive together are handled in the same turn of the event loop; each prepares its
job (core.enqueue, no I/O) and waits, and one pipelined round trip then writes them all. A single
delivery waits for nothing but its own write. Every delivery is answered only after its own job is
stored (or Redis failed, which is a 503), so batching moves no guarantee. The web process never
imports the job code: RQ stores the function's dotted path.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import redis
from prometheus_client import Histogram
from rq import Queue

from core.enqueue import Enqueued, HeldConnection, JobWrite, prepare, write_all

ENQUEUE_SECONDS = Histogram(
    "plangate_enqueue_seconds",
    "Time from a delivery's job being ready to its write to Redis being answered",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25),
)
BATCH_SIZE = Histogram(
    "plangate_enqueue_batch_jobs", "Jobs written to Redis in one round trip", buckets=(1, 2, 4, 8, 16, 32, 64)
)


class Enqueuer:
    """Collects the jobs of one event-loop turn and writes them to Redis in one round trip."""

    def __init__(self, conn: redis.Redis) -> None:
        self._conn = conn
        # this thread's alone; it connects on first use
        self._held = cast(HeldConnection, conn.connection_pool.make_connection())
        self._pending: list[tuple[JobWrite, asyncio.Future[Enqueued]]] = []

    async def enqueue(self, queue: Queue, func: str, job_id: str, request: Any, *, result_ttl: int) -> Enqueued:
        """`func(request=...)` once per `job_id`; raises redis.RedisError when it could not be stored."""
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Enqueued] = loop.create_future()
        if not self._pending:
            loop.call_soon(self._flush)
        self._pending.append((prepare(queue, func, job_id, request, result_ttl=result_ttl), answer))
        try:
            return await answer
        finally:
            ENQUEUE_SECONDS.observe(time.perf_counter() - started)

    def close(self) -> None:
        self._held.disconnect()

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        BATCH_SIZE.observe(len(batch))
        results: list[Enqueued | redis.RedisError] | list[Exception]
        try:
            results = write_all(self._conn, [write for write, _ in batch], on=self._held)
        except Exception as exc:  # every waiting delivery gets the failure: none is left hanging
            results = [exc] * len(batch)
        for (_, answer), result in zip(batch, results, strict=True):
            if answer.done():
                continue
            if isinstance(result, Enqueued):
                answer.set_result(result)
            else:
                answer.set_exception(result)
