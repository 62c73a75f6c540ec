"""A closed PR's entries in records other PRs read: the index of plans re-planned when the apply branch
moves (store.pr_plans), and its gate at its head commit, which could otherwise hold another PR at that
commit (store.gates.gate_at_commit). No seal is needed to delete."""

from __future__ import annotations

import redis

from core import redis_keys


def forget(conn: redis.Redis, repo_id: int, number: int, head_sha: str) -> None:
    """Both entries dropped, in one round trip."""
    with conn.pipeline(transaction=False) as pipe:
        pipe.hdel(redis_keys.pr_plans(repo_id), str(number))
        pipe.hdel(redis_keys.sha_gates(repo_id, head_sha), str(number))
        pipe.execute()
