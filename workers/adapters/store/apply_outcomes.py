"""Each project's apply outcome at one pushed SHA, from which `plangate/apply` is reported once all are in.

Plain values: an outcome only says what a status shows; a lost one is reported as an error."""

from __future__ import annotations

from typing import Any

import redis

from core import redis_keys


def record(conn: redis.Redis, repo_id: int, sha: str, project: str, outcome: str) -> None:
    key = redis_keys.apply_outcomes(repo_id, sha)
    conn.hset(key, project, outcome)
    conn.expire(key, redis_keys.GATE_TTL)


def read(conn: redis.Redis, repo_id: int, sha: str) -> dict[str, str]:
    """Project name → outcome, for the projects that reported one."""
    raw: Any = conn.hgetall(redis_keys.apply_outcomes(repo_id, sha))
    return {k.decode(): v.decode() for k, v in raw.items()}
