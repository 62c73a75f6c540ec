"""A running job takes a project's RQ RateLimit slot for itself, when the slot is free and no job
waits for it: so a PR's dispatch can plan its only project in place, without the hop to a job of its
own, and still never beside another plan, apply or drift of that project.

The slot is RQ's own (the RateLimit's `allowed` set, the job's id as its holder; plumbing.rq_internals),
so RQ's accounting stays whole: a job enqueued with the RateLimit meanwhile waits in `rate_limited`;
giving the slot back promotes it, as a finished rate-limited job would; and if the holder dies, RQ's
maintenance frees the slot once the holder is neither queued nor started (`RateLimitRegistry.cleanup`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import redis
from rq import RateLimit

from plumbing import rq_internals


def take(conn: redis.Redis, limit: RateLimit, holder: str) -> bool:
    """Did job `holder` get a slot of `limit` now? (Never waits: False means enqueue the work instead.)"""
    return rq_internals.take_slot(conn, limit.key, limit.concurrency, holder)


def give_back(conn: redis.Redis, limit: RateLimit, holder: str) -> None:
    """Free `holder`'s slot and let the oldest waiting job have it, as RQ does when a job ends."""
    rq_internals.give_back_slot(conn, limit.key, holder)


@contextlib.contextmanager
def held(conn: redis.Redis, limit: RateLimit, holder: str) -> Iterator[bool]:
    """A slot of `limit` for the block, if one is free now (yields whether it is held)."""
    took = take(conn, limit, holder)
    try:
        yield took
    finally:
        if took:
            give_back(conn, limit, holder)
