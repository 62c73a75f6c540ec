"""Recent runs for the status page: one JSON entry per plan/apply outcome, newest first, capped."""

from __future__ import annotations

import json
import time
from typing import Any

import redis

from core import redis_keys

RUNS_KEY = redis_keys.RUNS
KEEP = 200


def record_run(conn: redis.Redis, **fields: Any) -> None:
    """fields: kind (plan|apply|drift), repo, number, project, sha, summary, gate, approver, result, url."""
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
