"""The two places plangate writes RQ's private Redis keys itself, each in one atomic Lua call where RQ's
own API would take several round trips or could not do it at all. Both rely on RQ's internals, not on
its API: the RQ range they were checked against is pinned in pyproject.toml, and
tests/test_rq_contract.py fails on an RQ that stores them differently.

`enqueue_script`: enqueue a job once per id (plumbing.enqueue). It relies on
- the job hash `rq:job:<id>` (`Job.key_for`), holding the fields `Job.to_dict` saves (plumbing.enqueue
  copies them from a job RQ built, and writes the per-job ones — `created_at`, `enqueued_at`, `data`,
  `description` — as RQ does);
- the queue list `rq:queue:<name>` (`Queue.key`), which workers pop job ids from;
- the set `rq:queues` (`Queue.redis_queues_keys`), where workers find the queues.

`take_slot`: a running job takes a slot of an RQ RateLimit for itself (workers.adapters.queue.slots).
It relies on `rq.rate_limit.RateLimitRegistry`'s keys:
- `allowed_key`, a sorted set of the ids holding a slot (scored by when they took it);
- `rate_limited_key`, a sorted set of the ids waiting for one (RQ promotes the oldest first);
- `config_key`, a hash whose `concurrency` field RQ reads when it promotes a waiting job;
- `rl_keys_key`, the set of every RateLimit key, which RQ's maintenance walks to free the slots of
  dead holders (`RateLimitRegistry.cleanup`).
Giving a slot back is RQ's own `RateLimitRegistry.release_and_enqueue`, as when a rate-limited job ends.
"""

from __future__ import annotations

import redis
from redis.commands.core import Script
from rq.rate_limit import RateLimitRegistry
from rq.utils import current_timestamp

# KEYS: the job's hash, the queue's list, RQ's set of queues. ARGV: the job id, then HSET's pairs.
_ENQUEUE_ONCE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], KEYS[2])
return 1
"""

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


def enqueue_script(conn: redis.Redis) -> Script:
    """The script that writes a job under its id unless the id exists: its keys are the job's hash,
    the queue's list and RQ's set of queues; its arguments the job id, then the hash's field pairs.
    Answers 1 when it wrote the job, 0 when the id existed."""
    return conn.register_script(_ENQUEUE_ONCE)


def slot_keys(key: str, conn: redis.Redis) -> list[str]:
    """The keys of RQ's RateLimit `key` that taking a slot touches, in the script's order."""
    registry = RateLimitRegistry(key, conn)
    return [registry.allowed_key, registry.rate_limited_key, registry.config_key, RateLimitRegistry.rl_keys_key]


def take_slot(conn: redis.Redis, key: str, concurrency: int, holder: str) -> bool:
    """Did `holder` get a slot of RQ's RateLimit `key` now? Never waits."""
    args: list[str | int | float] = [holder, concurrency, current_timestamp(), key]
    return bool(conn.register_script(_TAKE)(keys=slot_keys(key, conn), args=args))


def give_back_slot(conn: redis.Redis, key: str, holder: str) -> None:
    """Free `holder`'s slot of RateLimit `key` and let the oldest waiting job have it, as RQ does."""
    RateLimitRegistry(key, conn).release_and_enqueue(holder)
