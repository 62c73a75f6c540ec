"""Which SHA of each PR is being planned now (its head as plangate last saw it), and whether a fork PR
was already told it is not planned here. Neither unlocks anything: the head only stops an older SHA's
results from being posted over a newer one's."""

from __future__ import annotations

import redis

from core import redis_keys

TTL = redis_keys.GATE_TTL


def take(conn: redis.Redis, repo_id: int, pr: int, sha: str) -> str | None:
    """`sha` becomes the PR's head; the head it replaces (None when none was known)."""
    key = redis_keys.head(repo_id, pr)
    with conn.pipeline(transaction=True) as pipe:
        pipe.getset(key, sha)
        pipe.expire(key, TTL)
        previous, _ = pipe.execute()
    return previous.decode() if isinstance(previous, bytes) else None


def current(conn: redis.Redis, repo_id: int, pr: int) -> str | None:
    head = conn.get(redis_keys.head(repo_id, pr))
    return head.decode() if isinstance(head, bytes) else None


def first_fork_refusal(conn: redis.Redis, repo_id: int, pr: int) -> bool:
    """True once per fork PR (for a while): the refusal comment is posted once, not on every push."""
    return bool(conn.set(redis_keys.fork_refused(repo_id, pr), "1", nx=True, ex=redis_keys.FORK_REFUSED_TTL))
