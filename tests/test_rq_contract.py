"""What plumbing.rq_internals relies on in RQ (its private keys and fields), checked against the RQ
installed: an RQ upgrade that stores jobs, queues or RateLimits differently fails here."""

from __future__ import annotations

import uuid

import redis
from rq import Queue, RateLimit, SimpleWorker
from rq.job import Job, JobStatus
from rq.rate_limit import RateLimitRegistry

from plumbing import rq_internals
from plumbing.enqueue import enqueue_once, prepare
from tests.test_enqueue import ONCE, ONCE_OPTIONS, REQUEST


def test_the_enqueue_script_writes_the_keys_rq_reads(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test-contract", connection=redis_conn)
    write = prepare(queue, ONCE, "keys", REQUEST, ONCE_OPTIONS)
    assert write.keys == [Job.key_for("keys"), queue.key, Queue.redis_queues_keys]
    assert write.keys == ["rq:job:keys", "rq:queue:plangate-test-contract", "rq:queues"]  # as the docstring says


def test_a_job_enqueued_by_the_script_runs_as_one_enqueued_by_rq(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test-contract", connection=redis_conn)
    assert not enqueue_once(queue, ONCE, "ours", REQUEST, ONCE_OPTIONS).duplicate
    theirs = queue.enqueue(ONCE, kwargs={"request": REQUEST}, job_id="theirs")
    assert queue in Queue.all(connection=redis_conn)  # workers find the queue
    assert queue.job_ids == ["ours", "theirs"]
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    ours = Job.fetch("ours", connection=redis_conn)
    assert ours.get_status() == theirs.get_status() == JobStatus.FINISHED
    assert ours.return_value() == theirs.return_value() == f"{REQUEST.repo}@{REQUEST.after}"
    assert ours.func_name == theirs.func_name == ONCE
    assert ours.kwargs == theirs.kwargs == {"request": REQUEST}
    assert ours.timeout == ONCE_OPTIONS.timeout() and ours.result_ttl == ONCE_OPTIONS.result_ttl


def _limit() -> RateLimit:
    return RateLimit(key=f"project-contract-{uuid.uuid4().hex}", concurrency=1)


def test_the_slot_script_uses_rqs_rate_limit_keys(redis_conn: redis.Redis) -> None:
    limit = _limit()
    registry = RateLimitRegistry(limit.key, redis_conn)
    assert rq_internals.slot_keys(limit.key, redis_conn) == [
        registry.allowed_key,
        registry.rate_limited_key,
        registry.config_key,
        RateLimitRegistry.rl_keys_key,
    ]
    queue = Queue("plangate-test-contract", connection=redis_conn)
    queue.enqueue("builtins.len", "x", rate_limit=limit)  # RQ registers the limit itself
    ours = _limit()
    assert rq_internals.take_slot(redis_conn, ours.key, ours.concurrency, "holder")
    theirs = RateLimitRegistry(ours.key, redis_conn)
    assert redis_conn.hgetall(theirs.config_key) == redis_conn.hgetall(registry.config_key)  # the same fields
    members = redis_conn.smembers(RateLimitRegistry.rl_keys_key)
    assert {limit.key.encode(), ours.key.encode()} <= members  # RQ's maintenance walks both
    assert theirs.get_allowed_job_ids() == ["holder"]


def test_a_slot_taken_by_the_script_holds_rqs_own_rate_limited_jobs(redis_conn: redis.Redis) -> None:
    queue, limit = Queue("plangate-test-contract", connection=redis_conn), _limit()
    holder = Queue("plangate-test-contract-holders", connection=redis_conn).enqueue("builtins.len", "h")
    holder.set_status(JobStatus.STARTED)  # running: RQ's maintenance leaves its slot alone
    assert rq_internals.take_slot(redis_conn, limit.key, limit.concurrency, holder.id)
    waiting = queue.enqueue("builtins.len", "x", rate_limit=limit)
    assert waiting.get_status() == JobStatus.RATE_LIMITED
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    assert waiting.get_status() == JobStatus.RATE_LIMITED
    rq_internals.give_back_slot(redis_conn, limit.key, holder.id)
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    assert waiting.get_status() == JobStatus.FINISHED
