"""The web process's side of enqueueing: the jobs of deliveries handled together go in one write.

Deliveries that arrive together are handled in the same turn of the event loop; each prepares its
job (plumbing.enqueue, no I/O) and waits, and one pipelined round trip then writes them all. While Redis
answers, the event loop goes on serving requests, whose jobs make the next write: one write is in
flight at a time. A single delivery waits for nothing but its own write. Every delivery is answered
only after its own job is stored (or Redis failed, which is a 503), so batching moves no guarantee.
The web process never imports the job code: RQ stores the function's dotted path.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis
from prometheus_client import Histogram
from redis.asyncio.connection import AbstractConnection as AsyncConnection
from rq import Queue

from plumbing.enqueue import Enqueued, JobWrite, prepare, write_all
from plumbing.job_options import Options

ENQUEUE_SECONDS = Histogram(
    "plangate_enqueue_seconds",
    "Time from a delivery's job being ready to its write to Redis being answered",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25),
)
BATCH_SIZE = Histogram(
    "plangate_enqueue_batch_jobs", "Jobs written to Redis in one round trip", buckets=(1, 2, 4, 8, 16, 32, 64)
)


class Enqueuer:
    """Collects the jobs of deliveries as they come and writes them to Redis, one round trip at a time."""

    def __init__(self, conn: redis.Redis, held: AsyncConnection) -> None:
        self._conn = conn
        self._held = held  # this event loop's alone; it connects on first use
        self._pending: list[tuple[JobWrite, asyncio.Future[Enqueued]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def enqueue(
        self, queue: Queue, func: str, job_id: str, request: Any, options: Options | None = None
    ) -> Enqueued:
        """`func(request=...)` once per `job_id`, with its kind's options unless `options` says otherwise;
        raises redis.RedisError when it could not be stored."""
        started = time.perf_counter()
        answer: asyncio.Future[Enqueued] = asyncio.get_running_loop().create_future()
        self._pending.append((prepare(queue, func, job_id, request, options), answer))
        if self._writer is None:  # starts on the loop's next turn, with every job of this one
            self._writer = asyncio.create_task(self._write_pending())
        try:
            return await answer
        finally:
            ENQUEUE_SECONDS.observe(time.perf_counter() - started)

    async def close(self) -> None:
        await self._held.disconnect()

    async def _write_pending(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                BATCH_SIZE.observe(len(batch))
                results: list[Enqueued | redis.RedisError] | list[Exception]
                try:
                    results = await write_all(self._conn, [write for write, _ in batch], on=self._held)
                except Exception as exc:  # every waiting delivery gets the failure: none is left hanging
                    results = [exc] * len(batch)
                _answer(batch, results)
        finally:
            self._writer = None


def _answer(
    batch: list[tuple[JobWrite, asyncio.Future[Enqueued]]],
    results: list[Enqueued | redis.RedisError] | list[Exception],
) -> None:
    """Each waiting delivery gets its own job's outcome (one whose request has gone is skipped)."""
    for (_, answer), result in zip(batch, results, strict=True):
        if answer.done():
            continue
        if isinstance(result, Enqueued):
            answer.set_result(result)
        else:
            answer.set_exception(result)
