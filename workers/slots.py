"""A running job takes a project's RQ RateLimit slot for itself, when the slot is free and no job
waits for it: so a PR's dispatch can plan its only project in place, without the hop to a job of its
own, and still never beside another plan, apply or drift of that project.

The slot is RQ's own (the RateLimit's `allowed` set, the job's id as its holder), so RQ's accounting
stays whole: a job enqueued with the RateLimit meanwhile waits in `rate_limited`; giving the slot
back promotes it, as a finished rate-limited job would; and if the holder dies, RQ's maintenance
frees the slot once the holder is neither queued nor started (`RateLimitRegistry.cleanup`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import redis
from rq import RateLimit
from rq.rate_limit import RateLimitRegistry
from rq.utils import current_timestamp

# Free and nobody waiting (RQ promotes waiting jobs oldest first: they keep their turn), or already
# held by this holder (a re-run of a job that died holding it). Registers the key as RQ does.
# KEYS: allowed, rate_limited, config, rl-keys; ARGV: holder, concurrency, timestamp, key
_TAKE = """
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
    return 1
end
if redis.call('ZCARD', KEYS[2]) > 0 or redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[4])
redis.call('HSET', KEYS[3], 'concurrency', ARGV[2])
return 1
"""


def take(conn: redis.Redis, limit: RateLimit, holder: str) -> bool:
    """Did job `holder` get a slot of `limit` now? (Never waits: False means enqueue the work instead.)"""
    registry = RateLimitRegistry(limit.key, conn)
    keys = [registry.allowed_key, registry.rate_limited_key, registry.config_key, RateLimitRegistry.rl_keys_key]
    args: list[str | int | float] = [holder, limit.concurrency, current_timestamp(), limit.key]
    return bool(conn.register_script(_TAKE)(keys=keys, args=args))


def give_back(conn: redis.Redis, limit: RateLimit, holder: str) -> None:
    """Free `holder`'s slot and let the oldest waiting job have it, as RQ does when a job ends."""
    RateLimitRegistry(limit.key, conn).release_and_enqueue(holder)


@contextlib.contextmanager
def held(conn: redis.Redis, limit: RateLimit, holder: str) -> Iterator[bool]:
    """A slot of `limit` for the block, if one is free now (yields whether it is held)."""
    took = take(conn, limit, holder)
    try:
        yield took
    finally:
        if took:
            give_back(conn, limit, holder)
