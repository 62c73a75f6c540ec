"""Every job that owes a report has a last word: when it fails for good, a `last_word` job says so.

RQ ends a job three ways — it raised, its work horse was killed, or its whole worker vanished (found
abandoned by maintenance) — and only the first and last call a failure callback, so plangate's worker
calls `failed` for a killed horse too (workers.rq_worker). A job that will be tried again (retries
left, or rescheduled through an outage by workers.rescheduling) owes nothing yet.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import redis
from rq import Queue
from rq.exceptions import DeserializationError
from rq.job import Job

from core.contract import COMMANDS_QUEUE, LAST_WORD_JOBS, Jobs
from core.render.lost import KILLED, OUTAGE
from plumbing.job_options import GAVE_UP, OPTIONS
from workers.adapters.github.client import outage
from workers.adapters.github.metrics import Recorder
from workers.adapters.queue.fanout import fallback_publish_id, not_ended

log = logging.getLogger("plangate.watchdog")


def failed(job: Job, connection: redis.Redis, kind: type, value: BaseException | None, traceback: Any) -> None:
    """RQ's failure callback of plangate's jobs: count an abandoned one, and on the last try of a job
    that owes a report, enqueue its last word."""
    if kind.__name__ == "AbandonedJobError":
        Recorder(connection).job("abandoned")
        why = KILLED
    elif value is not None and outage(value):
        why = OUTAGE
    else:
        why = kind.__name__
    owed(connection, job, str(job.meta.get(GAVE_UP) or why))


def owed(connection: redis.Redis, job: Job, why: str) -> None:
    """Enqueue the last word of `job` (once, however often this is called) unless it will run again."""
    try:
        func, kwargs = job.func_name, dict(job.kwargs)
    except DeserializationError:  # enqueued by a version whose payload this one cannot read
        log.error(json.dumps({"job": job.id, "last_word": "payload unreadable"}))
        Recorder(connection).job("unreadable")
        return
    if job.retries_left or func not in LAST_WORD_JOBS:
        return
    if connection.exists(Job.key_for(fallback_publish_id(job.id))):
        return  # the job planned in place and left a publish behind, which reports its death
    fixed = f"{job.id}-last-word"
    if not_ended(connection, fixed):
        return
    Queue(COMMANDS_QUEUE, connection=connection).enqueue(
        Jobs.LAST_WORD,
        kwargs={"job": func, "kwargs": kwargs, "why": why},
        job_id=fixed,
        **OPTIONS[Jobs.LAST_WORD].enqueue_args(),
    )
