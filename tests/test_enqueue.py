"""plumbing.enqueue: one round trip, once per job id, and a job RQ cannot tell from one it enqueued itself."""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import replace
from datetime import UTC, datetime

import redis
from hypothesis import given
from hypothesis import strategies as st
from rq import Callback, Queue, Retry, SimpleWorker
from rq.job import Job, JobStatus
from rq.utils import utcformat

from core.contract import JOB_FAILED, LAST_WORD_JOBS, PLAN_RETRIES, RERUN_INTERVALS, Jobs, PushRequest
from plumbing.enqueue import Enqueued, description, enqueue_once, prepare, stamp, write_all
from plumbing.job_options import OPTIONS, Options
from plumbing.redis_client import held_async

REQUEST = PushRequest(
    installation_id=1,
    repo_id=2,
    repo="acme/infra",
    clone_url="https://x/acme/infra.git",
    default_branch="main",
    before="a" * 40,
    after="b" * 40,
    branch="main",
    authors=("alice",),
)
OTHER = PushRequest(**{**REQUEST.target(), "before": "c" * 40, "after": "d" * 40, "branch": "main", "authors": ()})
RERUN = Jobs.PLAN_PR  # re-run when its worker dies: a Retry and a failure callback
ONCE = "tests.jobs.echo.echo"  # never re-run
ONCE_OPTIONS = Options(3 * 3600, result_ttl=3600, retry=None, on_failure=None)  # as a command's
MOMENTS = {"created_at", "enqueued_at"}  # each enqueue's own time


def _hash(conn: redis.Redis, job_id: str) -> dict[bytes, bytes]:
    """The job's hash as RQ reads it: its call decompressed (RQ's own is compressed, ours only wrapped)."""
    found: dict[bytes, bytes] = conn.hgetall(f"rq:job:{job_id}")  # type: ignore[assignment]
    return {k: zlib.decompress(v) if k == b"data" else v for k, v in found.items() if k.decode() not in MOMENTS}


def test_the_job_is_the_one_rq_itself_would_save(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test", connection=redis_conn)
    for name, func, retry in (("rerun", RERUN, True), ("once", ONCE, False)):
        options = Options(600, result_ttl=60, retry=None, on_failure=None)
        if retry:
            options = replace(OPTIONS[func], seconds=600, result_ttl=60)
        enqueue_once(queue, func, f"first-{name}", OTHER, options)  # RQ builds this kind
        ours = enqueue_once(queue, func, f"ours-{name}", REQUEST, options)  # from the template
        assert not ours.duplicate
        queue.enqueue(
            func,
            kwargs={"request": REQUEST},
            job_id=f"rq-{name}",
            description=description(func, f"ours-{name}"),
            unique=True,
            job_timeout=600,
            result_ttl=60,
            retry=Retry(max=PLAN_RETRIES, interval=list(RERUN_INTERVALS)) if retry else None,
            on_failure=Callback(JOB_FAILED) if retry or func in LAST_WORD_JOBS else None,
        )
        assert _hash(redis_conn, f"ours-{name}") == _hash(redis_conn, f"rq-{name}")
    assert set(_hash(redis_conn, "ours-rerun")) >= {b"data", b"origin", b"status", b"retries_left"}
    assert queue.job_ids == ["first-rerun", "ours-rerun", "rq-rerun", "first-once", "ours-once", "rq-once"]
    assert queue in Queue.all(connection=redis_conn)


@given(st.datetimes(min_value=datetime(1970, 1, 1), timezones=st.just(UTC)))
def test_job_times_are_written_as_rq_writes_them(at: datetime) -> None:
    assert stamp(at) == utcformat(at)


def test_a_second_enqueue_of_the_id_changes_nothing(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test", connection=redis_conn)
    first = enqueue_once(queue, ONCE, "push-2-b", REQUEST, ONCE_OPTIONS)
    before = redis_conn.hgetall("rq:job:push-2-b")
    again = enqueue_once(queue, ONCE, "push-2-b", OTHER, ONCE_OPTIONS)
    assert (first.duplicate, again.duplicate) == (False, True)
    assert redis_conn.hgetall("rq:job:push-2-b") == before
    assert queue.job_ids == ["push-2-b"]


def test_an_rq_worker_runs_it_with_its_typed_request(redis_conn: redis.Redis) -> None:
    queue = Queue("plangate-test", connection=redis_conn)
    enqueue_once(queue, ONCE, "push-2-b", REQUEST, ONCE_OPTIONS)
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    job = Job.fetch("push-2-b", connection=redis_conn)
    assert job.get_status() == JobStatus.FINISHED
    assert job.return_value() == f"acme/infra@{'b' * 40}"


def test_writes_pipelined_together_each_answer_for_themselves(redis_conn: redis.Redis, redis_url: str) -> None:
    queue = Queue("plangate-test", connection=redis_conn)
    enqueue_once(queue, ONCE, "stored-before", REQUEST, ONCE_OPTIONS)
    writes = [
        prepare(queue, ONCE, job, req, ONCE_OPTIONS)
        for job, req in (("a", REQUEST), ("stored-before", OTHER), ("a", OTHER))
    ]
    redis_conn.script_flush()  # as after a Redis restart: the script must be loaded again, each job written once
    held = held_async(redis_url)

    async def written() -> list[Enqueued | redis.RedisError]:
        try:
            return await write_all(redis_conn, writes, on=held)
        finally:
            await held.disconnect()

    results = asyncio.run(written())
    assert results == [Enqueued("a", False), Enqueued("stored-before", True), Enqueued("a", True)]
    assert queue.job_ids == ["stored-before", "a"]
    SimpleWorker([queue], connection=redis_conn).work(burst=True)
    assert Job.fetch("a", connection=redis_conn).return_value() == f"acme/infra@{'b' * 40}"  # the first write won
