"""Put a job on an RQ queue once per job id, in one round trip to Redis.

RQ builds and serializes the first job of each kind (function, queue, timeout, result TTL): its
timeout, retry, failure callback and every other field RQ saves. Later jobs of that kind reuse
those fields and differ only in what RQ itself varies per job: the id, the serialized call, its
description and the two timestamps, each computed the way RQ computes it (checked against RQ's
own job when the template is made); the call is zlib-wrapped uncompressed, which RQ reads alike,
and the description names the job id (`description`).
RQ's own unique enqueue costs two round trips (a MULTI/EXEC registering the queue, then its Lua
script) and a Job object per call, which were most of a webhook's time
(benchmarks/bench_webhook.py); this script checks the id, saves the job, pushes it and registers
the queue in one atomic call (plumbing.rq_internals).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import hiredis
import redis
import rq
from redis.asyncio.connection import AbstractConnection as AsyncConnection
from redis.commands.core import Script
from redis.exceptions import NoScriptError, RedisError, ResponseError
from rq import Queue
from rq.job import validate_job_id
from rq.utils import now

from plumbing import rq_internals
from plumbing.job_options import OPTIONS, Options

_PER_JOB = ("created_at", "enqueued_at", "data", "description")  # what RQ varies between jobs of a kind
_STORED = 0  # zlib level 0: a job's few hundred bytes, stored as a valid zlib stream RQ reads, not compressed


@dataclass(frozen=True)
class Enqueued:
    job_id: str
    duplicate: bool


@dataclass(frozen=True)
class _Template:
    """What every job of one kind saves alike, as HSET pairs, and the script that writes it."""

    func: str
    serializer: Any  # the queue's (RQ's default: pickle)
    job_key_prefix: str
    queue_key: str
    queues_key: str
    constant: tuple[str | bytes, ...]
    script: Script  # always run with the caller's connection (`client=`), never the one it was made on

    def write(self, job_id: str, request: Any) -> tuple[list[str], list[str | bytes]]:
        """The script's keys and arguments for the job `job_id` running `func(request=...)`."""
        kwargs = _kwargs(request)
        at = stamp(now())
        per_job: list[str | bytes] = [
            "created_at",
            at,
            "enqueued_at",
            at,
            "data",
            zlib.compress(_serialized(self.serializer, self.func, kwargs), _STORED),
            "description",
            description(self.func, job_id),
        ]
        return [self.job_key_prefix + job_id, self.queue_key, self.queues_key], [
            job_id,
            *self.constant,
            *per_job,
        ]


_templates: dict[tuple[object, str, str, Options], _Template] = {}


def _kwargs(request: Any) -> dict[str, Any]:
    return {"request": request} if request is not None else {}


def _serialized(serializer: Any, func: str, kwargs: dict[str, Any]) -> bytes:
    """`Job.data`: the serialized (function, instance, args, kwargs)."""
    return serializer.dumps((func, None, (), kwargs))  # type: ignore[no-any-return]


def stamp(at: datetime) -> str:
    """RQ's `utcformat` of a UTC time, by `isoformat`, which is faster than RQ's `strftime`."""
    return at.isoformat(timespec="microseconds").removesuffix("+00:00") + "Z"


def description(func: str, job_id: str) -> str:
    """What RQ shows for the job (its logs, `rq info`): the function and the job id, which names the
    repository, PR or push, and SHA; RQ's default, the call's repr cut at 75 characters, names
    only the repository, and costs a third of the job's preparation."""
    return f"{func}({job_id})"


def _template(queue: Queue, func: str, request: Any, options: Options) -> _Template:
    """RQ builds one job of this kind; everything but the per-job fields is kept for the next ones."""
    kwargs = _kwargs(request)
    job = queue.create_job(
        func,
        kwargs=kwargs,
        timeout=options.timeout(),
        result_ttl=options.result_ttl,
        retry=options.retry,
        on_failure=options.on_failure,
    )
    queue._prepare_for_queue(job)  # RQ's own: origin, enqueued_at, timeout, status queued
    saved = job.to_dict()
    if job.data != _serialized(queue.serializer, func, kwargs):
        raise RuntimeError(f"RQ {rq.__version__} serializes jobs differently than plumbing.enqueue expects")
    if job.enqueued_at is None or stamp(job.enqueued_at) != saved["enqueued_at"]:
        raise RuntimeError(f"RQ {rq.__version__} stores job times differently than plumbing.enqueue expects")
    constant: list[str | bytes] = []
    for name, value in saved.items():
        if value is not None and name not in _PER_JOB:  # RQ leaves out what is None
            constant += [name, value if isinstance(value, bytes | str) else str(value)]
    return _Template(
        func,
        queue.serializer,
        job.key.removesuffix(job.id),
        queue.key,
        queue.redis_queues_keys,
        tuple(constant),
        rq_internals.enqueue_script(queue.connection),
    )


@dataclass(frozen=True)
class JobWrite:
    """One job ready to be written: the script, its keys and arguments."""

    job_id: str
    script: Script
    keys: list[str]
    args: list[str | bytes]


def prepare(queue: Queue, func: str, job_id: str, request: Any, options: Options | None = None) -> JobWrite:
    """The write that enqueues `func(request=...)` as `job_id` unless that id exists (no I/O), with
    the options of its kind (plumbing.job_options) unless `options` says otherwise."""
    validate_job_id(job_id)  # RQ's own enqueue refuses such an id; a worker would drop it unseen
    chosen = OPTIONS[func] if options is None else options
    kind = (queue.serializer, queue.name, func, chosen)  # the same on every connection
    template = _templates.get(kind)
    if template is None:
        template = _templates[kind] = _template(queue, func, request, chosen)
    keys, args = template.write(job_id, request)
    return JobWrite(job_id, template.script, keys, args)


async def write_all(client: redis.Redis, writes: list[JobWrite], *, on: AsyncConnection) -> list[Enqueued | RedisError]:
    """Run the writes in one round trip on `on`, an asyncio connection of the caller's alone (the event
    loop serves other requests while Redis answers; redis-py's pool and client layers around each call
    cost as much as the write itself); each write answers for itself (a duplicate or an error). A
    connection found dropped (a Redis restart) is opened again once, as redis-py's pool would: the
    script is idempotent, so a write that did run answers as a duplicate.

    A Redis that lost its script cache (a restart) answers NOSCRIPT without running anything: the
    script is loaded and those writes run again through `client`, so each still runs exactly once.
    """
    commands = [("EVALSHA", w.script.sha, str(len(w.keys)), *w.keys, *w.args) for w in writes]
    try:
        answers = await _round_trip(on, commands)
    except redis.ConnectionError:  # it disconnected; the next send connects again
        answers = await _round_trip(on, commands)
    results: list[Enqueued | RedisError] = []
    for write, answer in zip(writes, answers, strict=True):
        if isinstance(answer, NoScriptError):
            answer = write.script(keys=write.keys, args=write.args, client=client)  # loads it, then runs it
        results.append(answer if isinstance(answer, RedisError) else Enqueued(write.job_id, not answer))
    return results


async def _round_trip(on: AsyncConnection, commands: list[tuple[Any, ...]]) -> list[Any]:
    """Send every command, then read every answer (an error answer is returned, not raised)."""
    try:
        if not on.is_connected:  # a send would connect too, but past a Sentinel connection's master lookup
            await on.connect()  # type: ignore[no-untyped-call]
        packed = b"".join(map(hiredis.pack_command, commands))  # in C: faster than redis-py's packer
        await on.send_packed_command([packed])
        answers: list[Any] = []
        for _ in commands:
            try:
                answers.append(await on.read_response())
            except ResponseError as exc:  # read whole: the connection stays in step
                answers.append(exc)
        return answers
    except BaseException:
        await on.disconnect()  # answers may still be on their way: never reuse the connection
        raise


def enqueue_once(queue: Queue, func: str, job_id: str, request: Any, options: Options | None = None) -> Enqueued:
    """Enqueue `func(request=...)` unless a job with this id already exists (a redelivery or duplicate)."""
    write = prepare(queue, func, job_id, request, options)
    return Enqueued(job_id, duplicate=not write.script(keys=write.keys, args=write.args, client=queue.connection))
