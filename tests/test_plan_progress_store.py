"""The Redis side of a plan's progress (workers.adapters.store.plan_progress), on a real Redis: the
projects and jobs sealed, plans counted only for the job recorded, one turn per PR, the comment's lock
given back by its holder only, and the sealed "published" flag."""

from __future__ import annotations

import asyncio
import time

import redis

from core import redis_keys
from plumbing.records import Records
from tests.keys import rsa_pem
from workers.adapters.store import plan_progress as store

KEY = rsa_pem()
SHA = "a" * 40


def _records(conn: redis.Redis) -> Records:
    return Records(conn, KEY)


def test_the_progress_counts_only_plans_of_the_jobs_recorded(redis_conn: redis.Redis) -> None:
    records = _records(redis_conn)
    assert store.load(records, 1, 2, SHA) is None
    store.ended(records, 1, 2, SHA, "a@default", "job-1")  # before the dispatch recorded anything
    store.start(records, 1, 2, SHA, {"a@default": "a", "b@default": "b", "c@default": "c"})
    store.planned_by(records, 1, 2, SHA, {"a@default": "job-1", "b@default": "job-1", "c@default": "job-2"})
    store.ended(records, 1, 2, SHA, "c@default", "an-older-dispatchs-job")
    progress = store.load(records, 1, 2, SHA)
    assert progress is not None
    assert list(progress.projects) == ["a@default", "b@default", "c@default"]  # in planning order
    assert progress.done == {"a@default"}
    store.planned_by(records, 1, 2, SHA, {"c@default": "an-older-dispatchs-job"})  # handed on: that job now
    again = store.load(records, 1, 2, SHA)
    assert again is not None and again.done == {"a@default", "c@default"}
    assert 0 < redis_conn.ttl(redis_keys.progress_done(1, 2, SHA)) <= redis_keys.PROGRESS_TTL
    assert 0 < redis_conn.ttl(redis_keys.progress_jobs(1, 2, SHA)) <= redis_keys.PROGRESS_TTL


def test_forged_records_count_for_nothing(redis_conn: redis.Redis) -> None:
    records = _records(redis_conn)
    redis_conn.set(redis_keys.progress(1, 2, SHA), '{"x@default": "<!-- plangate:approval -->"}')
    assert store.load(records, 1, 2, SHA) is None
    redis_conn.set(redis_keys.plan_published(1, 2, SHA), "1")
    assert not store.published(records, 1, 2, SHA)
    store.start(records, 1, 2, SHA, {"a@default": "a"})
    redis_conn.hset(redis_keys.progress_jobs(1, 2, SHA), "a@default", "forged")
    redis_conn.sadd(redis_keys.progress_done(1, 2, SHA), '["a@default", "forged"]', "not json", "[1]")
    progress = store.load(records, 1, 2, SHA)
    assert progress is not None and progress.jobs == {} and progress.done == frozenset()


def test_the_progress_is_counted_once_a_dispatch_recorded_it(redis_conn: redis.Redis) -> None:
    records = _records(redis_conn)
    assert not store.counted(records, 1, 2, SHA)
    store.ended(records, 1, 2, SHA, "a@default", "job-1")  # a plan's end records nothing to count it by
    assert not store.counted(records, 1, 2, SHA)
    store.start(records, 1, 2, SHA, {"a@default": "a"})
    assert store.counted(records, 1, 2, SHA)
    assert not store.counted(records, 1, 3, SHA) and not store.counted(records, 1, 2, "b" * 40)


def test_one_turn_per_pr_and_the_first_always_goes(redis_conn: redis.Redis) -> None:
    records = _records(redis_conn)
    assert store.take_turn(records, 1, 2)
    assert not store.take_turn(records, 1, 2)
    assert store.take_turn(records, 1, 3)  # another PR
    assert store.take_turn(records, 1, 2, first=True)
    assert not store.take_turn(records, 1, 2)
    assert 0 < redis_conn.ttl(redis_keys.progress_turn(1, 2)) <= redis_keys.PROGRESS_EVERY


def test_published_is_per_sha(redis_conn: redis.Redis) -> None:
    records = _records(redis_conn)
    store.mark_published(records, 1, 2, SHA)
    assert store.published(records, 1, 2, SHA) and not store.published(records, 1, 2, "b" * 40)


def test_the_lock_waits_for_its_holder_and_only_the_holder_gives_it_back(redis_conn: redis.Redis) -> None:
    records = _records(redis_conn)
    key = redis_keys.comment_lock(1, 2)

    async def story() -> list[str]:
        said: list[str] = []

        async def holder() -> None:
            async with store.comment_lock(records, 1, 2, wait=0) as held:
                said.append(f"holder {held}")
                await asyncio.sleep(0.5)
                said.append("holder done")

        async def waiter() -> None:
            await asyncio.sleep(0.1)
            async with store.comment_lock(records, 1, 2, wait=0) as held:
                said.append(f"impatient {held}")
            assert redis_conn.exists(key)  # not given back by one who never held it
            started = time.monotonic()
            async with store.comment_lock(records, 1, 2, wait=5) as held:
                said.append(f"patient {held} after {time.monotonic() - started >= 0.3}")

        await asyncio.gather(holder(), waiter())
        return said

    assert asyncio.run(story()) == ["holder True", "impatient False", "holder done", "patient True after True"]
    assert not redis_conn.exists(key)


def test_a_dead_holders_lock_expires(redis_conn: redis.Redis) -> None:
    records = _records(redis_conn)
    key = redis_keys.comment_lock(1, 2)
    redis_conn.set(key, "a holder that died", ex=1)

    async def wait() -> bool:
        async with store.comment_lock(records, 1, 2, wait=3) as held:
            return held

    assert asyncio.run(wait())
