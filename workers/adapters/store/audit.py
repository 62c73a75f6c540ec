"""Every gate decision is one structured log line and a counter.

Counters live in a Redis hash, not in process memory: RQ runs each job in a short-lived forked
work horse, so an in-process Prometheus counter would die with it. `bot.metrics` exposes the
hash on the web process's /metrics.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import redis

from core import redis_keys

DECISIONS = ("blocked", "approved", "refused", "voided", "applied", "apply-blocked", "apply-failed")
COUNTERS_KEY = redis_keys.GATE_DECISIONS
log = logging.getLogger("plangate.audit")


def record(conn: redis.Redis, decision: str, **fields: Any) -> None:
    """Log one gate decision and count it; a Redis error never hides the log line."""
    log.info(json.dumps({"gate": decision, **fields}, default=str, sort_keys=True))
    try:
        conn.hincrby(COUNTERS_KEY, decision, 1)
    except redis.RedisError as exc:
        log.warning(json.dumps({"gate-counter": decision, "error": type(exc).__name__}))
