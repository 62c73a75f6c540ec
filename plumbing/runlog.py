"""Recent runs for the status page: one JSON entry per plan/apply outcome (and per closed PR), newest first,
capped at KEEP: the status page reads them all in one LRANGE and groups them per repository."""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from core import redis_keys

RUNS_KEY = redis_keys.RUNS
KEEP = 1_000


def record_run(conn: redis.Redis, **fields: Any) -> None:
    """fields: kind (plan|approval|apply|drift|accept-drift|closed), repo, number, project, sha, summary, gate,
    gate_description, approver, result, url, run (the id of the run's page, /runs/{run})."""
    entry = {"at": time.time(), **fields}
    with conn.pipeline() as pipe:
        pipe.lpush(RUNS_KEY, json.dumps(entry, default=str))
        pipe.ltrim(RUNS_KEY, 0, KEEP - 1)
        pipe.execute()


def recent_runs(conn: redis.Redis, limit: int = 50) -> list[dict[str, Any]]:
    entries = []
    raw_entries: Any = conn.lrange(RUNS_KEY, 0, limit - 1)
    for raw in raw_entries:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries
