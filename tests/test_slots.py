"""A running job takes a project's RQ RateLimit slot itself (a dispatch planning in place): RQ's own
rate-limited jobs wait for it, keep their turn, and get it back when the holder ends or dies."""

from __future__ import annotations

import uuid

import redis
from rq import Queue, RateLimit, SimpleWorker
from rq.job import JobStatus
from rq.rate_limit import RateLimitRegistry

from tests.jobs.holders import running_job
from workers.adapters.queue import slots


def _limit() -> RateLimit:
    return RateLimit(key=f"project-test-{uuid.uuid4().hex}", concurrency=1)


def test_a_job_enqueued_while_the_slot_is_held_waits_until_it_is_given_back(redis_conn: redis.Redis) -> None:
    queue, limit = Queue("plangate-test-slots", connection=redis_conn), _limit()
    with slots.held(redis_conn, limit, running_job(redis_conn, "dispatch").id) as mine:
        assert mine
        waiting = queue.enqueue("builtins.len", "x", rate_limit=limit)
        assert waiting.get_status() == JobStatus.RATE_LIMITED
        SimpleWorker([queue], connection=redis_conn).work(burst=True)  # its maintenance included
        assert waiting.get_status() == JobStatus.RATE_LIMITED  # not beside the holder
    assert waiting.get_status() == JobStatus.QUEUED  # given back: the waiting job has the slot now
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    assert waiting.get_status() == JobStatus.FINISHED
    assert RateLimitRegistry(limit.key, redis_conn).get_allowed_job_ids() == []


def test_the_slot_is_not_taken_from_a_job_that_holds_it_or_waits_for_it(redis_conn: redis.Redis) -> None:
    queue, limit = Queue("plangate-test-slots", connection=redis_conn), _limit()
    holding = queue.enqueue("builtins.len", "x", rate_limit=limit)
    waiting = queue.enqueue("builtins.len", "y", rate_limit=limit)
    assert waiting.get_status() == JobStatus.RATE_LIMITED
    assert not slots.take(redis_conn, limit, "dispatch-1")  # held
    registry = RateLimitRegistry(limit.key, redis_conn)
    redis_conn.zrem(registry.allowed_key, holding.id)  # free, but a job still waits: its turn comes first
    assert not slots.take(redis_conn, limit, "dispatch-1")
    with slots.held(redis_conn, limit, "dispatch-1") as mine:
        assert not mine
    assert registry.get_rate_limited_job_ids() == [waiting.id]  # a refused take gives back nothing


def test_a_holder_that_runs_again_keeps_its_slot(redis_conn: redis.Redis) -> None:
    limit = _limit()
    assert slots.take(redis_conn, limit, "dispatch-1")
    assert not slots.take(redis_conn, limit, "dispatch-2")
    assert slots.take(redis_conn, limit, "dispatch-1")  # its worker died, RQ ran it again
    slots.give_back(redis_conn, limit, "dispatch-1")
    assert slots.take(redis_conn, limit, "dispatch-2")


def test_rqs_maintenance_frees_the_slot_of_a_holder_that_died(redis_conn: redis.Redis) -> None:
    queue, limit = Queue("plangate-test-slots", connection=redis_conn), _limit()
    holder = running_job(redis_conn, "dispatch")  # no RateLimit of its own
    assert slots.take(redis_conn, limit, holder.id)
    waiting = queue.enqueue("builtins.len", "y", rate_limit=limit)
    registry = RateLimitRegistry(limit.key, redis_conn)
    registry.cleanup()
    assert waiting.get_status() == JobStatus.RATE_LIMITED  # a started holder keeps it
    holder.set_status(JobStatus.FAILED)  # its worker was killed on every try
    registry.cleanup()  # what every worker's maintenance runs (rq.registry.clean_registries)
    assert waiting.get_status() == JobStatus.QUEUED
