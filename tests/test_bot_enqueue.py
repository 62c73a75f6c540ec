"""bot.enqueue: deliveries handled together share one round trip; each is answered for its own job."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine

import pytest
import redis
from redis.asyncio.connection import AbstractConnection as AsyncConnection
from rq import Queue

import bot.enqueue
import plumbing.enqueue
from bot.enqueue import Enqueuer
from plumbing.enqueue import Enqueued, JobWrite
from plumbing.redis_client import held_async
from standin.local_redis import free_port
from tests.test_enqueue import ONCE, ONCE_OPTIONS, OTHER, REQUEST


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of jobs in each round trip the enqueuer makes from now on."""
    rounds: list[int] = []
    real = plumbing.enqueue.write_all

    async def counted(
        conn: redis.Redis, writes: list[JobWrite], *, on: AsyncConnection
    ) -> list[Enqueued | redis.RedisError]:
        rounds.append(len(writes))
        return await real(conn, writes, on=on)

    monkeypatch.setattr(bot.enqueue, "write_all", counted)
    return rounds


def _queue_and_enqueuer(conn: redis.Redis, url: str, **options: float) -> tuple[Queue, Enqueuer]:
    """A test queue and an enqueuer writing to it over a held connection to `url`."""
    return Queue("plangate-test", connection=conn), Enqueuer(conn, held_async(url, **options))


def _each(
    enqueuer: Enqueuer, queue: Queue, jobs: tuple[tuple[str, object], ...]
) -> list[Coroutine[None, None, Enqueued]]:
    """One delivery's enqueue per (job id, request) of `jobs`, not yet awaited."""
    return [enqueuer.enqueue(queue, ONCE, job, req, ONCE_OPTIONS) for job, req in jobs]


def test_one_turn_of_deliveries_is_one_write(
    redis_conn: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rounds = _count_writes(monkeypatch)
    queue, enqueuer = _queue_and_enqueuer(redis_conn, redis_url)

    async def deliveries() -> list[Enqueued]:
        together = _each(enqueuer, queue, _JOBS)
        answers = await asyncio.gather(*together)
        later = await enqueuer.enqueue(queue, ONCE, "c", REQUEST, ONCE_OPTIONS)  # alone: its own write
        return [*answers, later]

    answers = asyncio.run(deliveries())
    assert answers == [Enqueued("a", False), Enqueued("b", False), Enqueued("a", True), Enqueued("c", False)]
    assert rounds == [3, 1]
    assert queue.job_ids == ["a", "b", "c"]


def test_redis_down_fails_every_waiting_delivery() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    down = redis.Redis.from_url(url, socket_connect_timeout=1)
    queue, enqueuer = _queue_and_enqueuer(down, url, socket_connect_timeout=1)

    async def deliveries() -> list[Enqueued | BaseException]:
        together = _each(enqueuer, queue, _JOBS)
        return await asyncio.gather(*together, return_exceptions=True)

    answers = asyncio.run(deliveries())
    assert len(answers) == 3 and all(isinstance(a, redis.ConnectionError) for a in answers)


_JOBS = (("a", REQUEST), ("b", OTHER), ("a", OTHER))


def test_a_dropped_connection_is_retried_and_each_job_written_once(redis_conn: redis.Redis, redis_url: str) -> None:
    queue, enqueuer = _queue_and_enqueuer(redis_conn, redis_url)

    async def deliveries() -> list[Enqueued]:
        first = await enqueuer.enqueue(queue, ONCE, "a", REQUEST, ONCE_OPTIONS)
        redis_conn.client_kill_filter(_type="normal", skipme=True)  # as a Redis restart drops it
        return [first, await enqueuer.enqueue(queue, ONCE, "b", OTHER, ONCE_OPTIONS)]

    assert asyncio.run(deliveries()) == [Enqueued("a", False), Enqueued("b", False)]
    assert queue.job_ids == ["a", "b"]


def test_any_failure_of_the_write_answers_every_waiting_delivery(
    redis_conn: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(conn: redis.Redis, writes: list[JobWrite], *, on: AsyncConnection) -> list[Enqueued]:
        raise TypeError("a bug, not Redis")

    monkeypatch.setattr(bot.enqueue, "write_all", broken)
    queue, enqueuer = _queue_and_enqueuer(redis_conn, redis_url)

    async def deliveries() -> list[Enqueued | BaseException]:
        together = _each(enqueuer, queue, _JOBS)
        return await asyncio.wait_for(asyncio.gather(*together, return_exceptions=True), timeout=5)

    answers = asyncio.run(deliveries())
    assert len(answers) == 3 and all(isinstance(a, TypeError) for a in answers)


def test_while_redis_answers_the_loop_serves_others_whose_jobs_make_the_next_write(
    redis_conn: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rounds = _count_writes(monkeypatch)
    queue, enqueuer = _queue_and_enqueuer(redis_conn, redis_url)

    async def deliveries() -> tuple[list[Enqueued], list[str]]:
        order: list[str] = []
        redis_conn.client_pause(300, all=False)  # Redis holds every write for 0.3 s, as a busy one would
        first = asyncio.ensure_future(enqueuer.enqueue(queue, ONCE, "a", REQUEST, ONCE_OPTIONS))
        first.add_done_callback(lambda _: order.append("a written"))
        await asyncio.sleep(0.1)  # the loop is free while the first write waits on Redis
        order.append("loop served")
        later = _each(enqueuer, queue, (("b", OTHER), ("c", REQUEST)))
        return [await first, *await asyncio.gather(*later)], order

    answers, order = asyncio.run(deliveries())
    assert order == ["loop served", "a written"]
    assert answers == [Enqueued("a", False), Enqueued("b", False), Enqueued("c", False)]
    assert rounds == [1, 2] and queue.job_ids == ["a", "b", "c"]
