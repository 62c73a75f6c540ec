"""Merge groups the queue dropped (merged, invalidated, dequeued): their results are published to no one."""

from __future__ import annotations

import redis

from core import redis_keys


def mark_gone(conn: redis.Redis, repo_id: int, head_sha: str) -> None:
    conn.set(redis_keys.mq_gone(repo_id, head_sha), "1", ex=redis_keys.MQ_GONE_TTL)


def is_gone(conn: redis.Redis, repo_id: int, head_sha: str) -> bool:
    return bool(conn.exists(redis_keys.mq_gone(repo_id, head_sha)))
