"""What the status page shows, read from Redis (never GitHub): the run log, the queues, RQ's workers,
how each worker runs terraform, and which installations are rate-limited. Blocking reads: the page
runs them in the thread pool."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis
from rq import Queue, Worker

from core import redis_keys
from core.contract import QUEUE_NAMES
from plumbing.runlog import KEEP, recent_runs


@dataclass(frozen=True)
class Seen:
    runs: list[dict[str, Any]]
    queues: dict[str, int]
    workers: list[dict[str, Any]]
    sandboxes: dict[str, str]
    rate_limited: dict[str, tuple[str, float]]
    failed: list[dict[str, Any]]


def read(conn: redis.Redis, repos: frozenset[str] | None) -> Seen:
    """What a reader of `repos` (None: every repository) may see. The whole run log (one LRANGE): the page
    groups all of it. Rate limits name installations, so only a reader of everything sees them; a
    signed-in person's runs are filtered from the whole log, case-insensitively as GitHub names them."""
    runs = recent_runs(conn, KEEP)
    if repos is not None:
        runs = [r for r in runs if str(r.get("repo", "")).lower() in repos]
    return Seen(
        runs=runs,
        queues={name: Queue(name, connection=conn).count for name in QUEUE_NAMES},
        workers=read_workers(conn),
        sandboxes=read_sandboxes(conn),
        rate_limited=read_rate_limited(conn) if repos is None else {},
        failed=read_failed(conn, repos),
    )


def read_workers(conn: redis.Redis) -> list[dict[str, Any]]:
    """RQ's registered workers as plain values for the renderer."""
    workers = []
    for worker in Worker.all(connection=conn):
        heartbeat = worker.last_heartbeat
        workers.append(
            {
                "name": worker.name,
                "state": worker.get_state(),
                "job": worker.get_current_job_id(),
                "queues": worker.queue_names(),
                "heartbeat": heartbeat.timestamp() if heartbeat else None,
            }
        )
    return sorted(workers, key=lambda w: str(w["name"]))


def read_rate_limited(conn: redis.Redis) -> dict[str, tuple[str, float]]:
    """Installation → (primary | secondary, seconds left), from the keys workers set while limited."""
    found = {}
    for key in conn.scan_iter(match=f"{redis_keys.RATE_LIMITED_PREFIX}*", count=100):
        kind, left = conn.get(key), conn.ttl(key)
        name = (key.decode() if isinstance(key, bytes) else str(key)).removeprefix(redis_keys.RATE_LIMITED_PREFIX)
        if isinstance(kind, bytes) and isinstance(left, int) and left > 0:
            found[name] = (kind.decode(), float(left))
    return found


def read_sandboxes(conn: redis.Redis) -> dict[str, str]:
    """Worker name → how it runs terraform, as each worker recorded it at start-up."""
    found = {}
    for key in conn.scan_iter(match=f"{redis_keys.SANDBOX_PREFIX}*", count=100):
        value = conn.get(key)
        name = key.decode() if isinstance(key, bytes) else str(key)
        if isinstance(value, bytes):
            found[name.removeprefix(redis_keys.SANDBOX_PREFIX)] = value.decode()
    return found


def read_failed(conn: redis.Redis, repos: frozenset[str] | None) -> list[dict[str, Any]]:
    """The projects whose last apply on their apply branch failed (workers.adapters.store.failed_applies),
    as plain values, in the repositories the reader may see."""
    found = []
    for key in conn.scan_iter(match=f"{redis_keys.FAILED_APPLIES_PREFIX}*", count=100):
        for text in conn.hgetall(key).values():
            record = json.loads(text)
            if repos is None or str(record.get("repo", "")).lower() in repos:
                found.append(record)
    return sorted(found, key=lambda r: (str(r.get("repo", "")), str((r.get("project") or {}).get("name", ""))))
