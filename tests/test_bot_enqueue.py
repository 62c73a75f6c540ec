"""bot.enqueue: deliveries handled together share one round trip; each is answered for its own job."""

from __future__ import annotations

import asyncio

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from rq import Queue

import bot.enqueue
import core.enqueue
from bot.enqueue import Enqueuer
from core.enqueue import Enqueued, HeldConnection, JobWrite
from standin.local_redis import free_port
from tests.test_enqueue import ONCE, OTHER, REQUEST


def test_one_turn_of_deliveries_is_one_write(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    rounds: list[int] = []
    real = core.enqueue.write_all

    def counted(conn: redis.Redis, writes: list[JobWrite], *, on: HeldConnection) -> list[Enqueued | redis.RedisError]:
        rounds.append(len(writes))
        return real(conn, writes, on=on)

    monkeypatch.setattr(bot.enqueue, "write_all", counted)
    queue = Queue("plangate-test", connection=redis_conn)
    enqueuer = Enqueuer(redis_conn)

    async def deliveries() -> list[Enqueued]:
        together = [enqueuer.enqueue(queue, ONCE, job, req, result_ttl=60) for job, req in _JOBS]
        answers = await asyncio.gather(*together)
        later = await enqueuer.enqueue(queue, ONCE, "c", REQUEST, result_ttl=60)  # alone: its own write
        return [*answers, later]

    answers = asyncio.run(deliveries())
    assert answers == [Enqueued("a", False), Enqueued("b", False), Enqueued("a", True), Enqueued("c", False)]
    assert rounds == [3, 1]
    assert queue.job_ids == ["a", "b", "c"]


def test_redis_down_fails_every_waiting_delivery() -> None:
    down = redis.Redis(port=free_port(), socket_connect_timeout=1, retry=Retry(NoBackoff(), 0))
    queue = Queue("plangate-test", connection=down)
    enqueuer = Enqueuer(down)

    async def deliveries() -> list[Enqueued | BaseException]:
        together = [enqueuer.enqueue(queue, ONCE, job, req, result_ttl=60) for job, req in _JOBS]
        return await asyncio.gather(*together, return_exceptions=True)

    answers = asyncio.run(deliveries())
    assert len(answers) == 3 and all(isinstance(a, redis.ConnectionError) for a in answers)


_JOBS = (("a", REQUEST), ("b", OTHER), ("a", OTHER))


def test_a_dropped_connection_is_retried_and_each_job_written_once(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test", connection=redis_conn)
    enqueuer = Enqueuer(redis.Redis(connection_pool=redis_conn.connection_pool))

    async def deliveries() -> list[Enqueued]:
        first = await enqueuer.enqueue(queue, ONCE, "a", REQUEST, result_ttl=60)
        redis_conn.client_kill_filter(_type="normal", skipme=True)  # as a Redis restart drops it
        return [first, await enqueuer.enqueue(queue, ONCE, "b", OTHER, result_ttl=60)]

    assert asyncio.run(deliveries()) == [Enqueued("a", False), Enqueued("b", False)]
    assert queue.job_ids == ["a", "b"]


def test_any_failure_of_the_write_answers_every_waiting_delivery(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(conn: redis.Redis, writes: list[JobWrite], *, on: HeldConnection) -> list[Enqueued]:
        raise TypeError("a bug, not Redis")

    monkeypatch.setattr(bot.enqueue, "write_all", broken)
    queue = Queue("plangate-test", connection=redis_conn)
    enqueuer = Enqueuer(redis_conn)

    async def deliveries() -> list[Enqueued | BaseException]:
        together = [enqueuer.enqueue(queue, ONCE, job, req, result_ttl=60) for job, req in _JOBS]
        return await asyncio.wait_for(asyncio.gather(*together, return_exceptions=True), timeout=5)

    answers = asyncio.run(deliveries())
    assert len(answers) == 3 and all(isinstance(a, TypeError) for a in answers)
