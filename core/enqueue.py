"""Put a job on an RQ queue once per job id, in one round trip to Redis.

RQ builds and serializes the job (its function path, typed payload, timeout, retry and failure
callback), so any RQ worker runs it as if RQ had enqueued it. Only the write is ours: RQ's own
unique enqueue costs two round trips (a MULTI/EXEC registering the queue, then its Lua script),
which were most of a webhook's time (benchmarks/bench_webhook.py); this script checks the id,
saves the job, pushes it and registers the queue in one atomic call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.commands.core import Script
from rq import Callback, Queue, Retry
from rq.job import Job

from core.contract import COUNT_ABANDONED, PLAN_RETRIES, RERUN_JOBS

# KEYS: the job's hash, the queue's list, RQ's set of queues. ARGV: the job id, then HSET's pairs.
_ENQUEUE_ONCE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], KEYS[2])
return 1
"""
_scripts: dict[int, Script] = {}


@dataclass(frozen=True)
class Enqueued:
    job_id: str
    duplicate: bool


def _fields(job: Job) -> list[str | bytes]:
    """The job hash as RQ saves it (`Job.to_dict`), flattened for HSET; RQ leaves out what is None."""
    pairs: list[str | bytes] = []
    for name, value in job.to_dict().items():
        if value is not None:
            pairs += [name, value if isinstance(value, bytes | str) else str(value)]
    return pairs


def _job_write(
    queue: Queue, func: str, job_id: str, request: Any, timeout: int, result_ttl: int
) -> tuple[list[str], list[str | bytes]]:
    """The script's keys and arguments for `func(request=...)`: RQ builds and serializes the job."""
    rerun = func in RERUN_JOBS
    job = queue.create_job(
        func,
        kwargs={"request": request} if request is not None else {},
        job_id=job_id,
        timeout=timeout,
        result_ttl=result_ttl,
        retry=Retry(max=PLAN_RETRIES) if rerun else None,
        on_failure=Callback(COUNT_ABANDONED) if rerun else None,
    )
    queue._prepare_for_queue(job)  # RQ's own: origin, enqueued_at, timeout, status queued
    return [job.key, queue.key, queue.redis_queues_keys], [job.id, *_fields(job)]


def enqueue_once(
    queue: Queue, func: str, job_id: str, request: Any, *, timeout: int = 3 * 3600, result_ttl: int = 3600
) -> Enqueued:
    """Enqueue `func(request=...)` unless a job with this id already exists (a redelivery or duplicate)."""
    keys, args = _job_write(queue, func, job_id, request, timeout, result_ttl)
    script = _scripts.get(id(queue.connection))
    if script is None:
        script = _scripts[id(queue.connection)] = queue.connection.register_script(_ENQUEUE_ONCE)
    return Enqueued(job_id, duplicate=not script(keys=keys, args=args))
