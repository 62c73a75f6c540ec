"""Each project's apply outcome at one pushed SHA, from which `plangate/apply` is reported once all are in.

Plain values: an outcome only says what a status shows; a lost one is reported as an error."""

from __future__ import annotations

from typing import Any

import redis

from core import redis_keys
from core.apply_outcome import ApplyOutcome


def record(conn: redis.Redis, repo_id: int, sha: str, project: str, outcome: ApplyOutcome) -> None:
    key = redis_keys.apply_outcomes(repo_id, sha)
    conn.hset(key, project, outcome.stored())
    conn.expire(key, redis_keys.GATE_TTL)


def read(conn: redis.Redis, repo_id: int, sha: str) -> dict[str, ApplyOutcome]:
    """Project name → outcome, for the projects that reported one."""
    raw: Any = conn.hgetall(redis_keys.apply_outcomes(repo_id, sha))
    return {k.decode(): ApplyOutcome.read(v.decode()) for k, v in raw.items()}
