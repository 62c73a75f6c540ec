"""plangate behind Redis Sentinel, against a real master, replica and sentinel: the web's clients, a
worker's and the cron scheduler's find the master through the sentinel, and follow it when the sentinel
fails over to the replica."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.sentinel import MasterNotFoundError
from rq import Queue, SimpleWorker
from rq.scheduler import RQScheduler

from plumbing import settings
from plumbing.enqueue import Enqueued, prepare, write_all
from plumbing.redis_client import connect, held_async
from tests.sentinels import SERVICE, Sentinels, sentinel_setup, wait_for
from tests.test_enqueue import ONCE_OPTIONS

pytestmark = pytest.mark.slow


@pytest.fixture
def sentinels(tmp_path: Path) -> Iterator[Sentinels]:
    with sentinel_setup(tmp_path) as setup:
        yield setup


def _url(setup: Sentinels, tmp_path: Path) -> str:
    """REDIS_URL as `plangate` loads it: the passwords from mounted files, as in deploy/."""
    (tmp_path / "redis-password").write_text(setup.password + "\n")
    (tmp_path / "sentinel-password").write_text(setup.sentinel_password + "\n")
    env = {
        "REDIS_URL": setup.url,
        "REDIS_PASSWORD_PATH": str(tmp_path / "redis-password"),
        "REDIS_SENTINEL_PASSWORD_PATH": str(tmp_path / "sentinel-password"),
    }
    return settings.load(env, need_redis_password=True).redis_url


def _enqueue(url: str, conn: redis.Redis, job_id: str) -> list[Enqueued | redis.RedisError]:
    """The web's write of one job, on its own held asyncio connection (bot/enqueue.py)."""
    write = prepare(Queue("plangate-plans", connection=conn), "os.getcwd", job_id, None, ONCE_OPTIONS)

    async def run() -> list[Enqueued | redis.RedisError]:
        held = held_async(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            return await write_all(conn, [write], on=held)
        finally:
            await held.disconnect()

    return asyncio.run(run())


def test_every_client_finds_the_master_through_the_sentinel(sentinels: Sentinels, tmp_path: Path) -> None:
    url = _url(sentinels, tmp_path)
    conn = connect(url, socket_connect_timeout=2, socket_timeout=2)
    conn.set("written", "through sentinel")
    assert sentinels.server("master").get("written") == b"through sentinel"
    assert _enqueue(url, conn, "job-1") == [Enqueued("job-1", duplicate=False)]
    assert sentinels.server("master").lrange("rq:queue:plangate-plans", 0, -1) == [b"job-1"]


def test_a_worker_and_rqs_scheduler_run_over_sentinel(sentinels: Sentinels, tmp_path: Path) -> None:
    conn = connect(_url(sentinels, tmp_path))
    queue = Queue("plangate-plans", connection=conn)
    job = queue.enqueue("os.getcwd")
    assert SimpleWorker([queue], connection=conn).work(burst=True)
    assert job.get_status(refresh=True) == "finished"
    # RQ's scheduler process rebuilds its connection from the pool's connection class and arguments.
    rebuilt = RQScheduler([queue], connection=conn).connection
    rebuilt.set("from the scheduler", 1)
    assert sentinels.server("master").get("from the scheduler") == b"1"


def test_the_clients_follow_the_master_through_a_failover(sentinels: Sentinels, tmp_path: Path) -> None:
    """The web's two clients, held across a failover as a running `plangate web` holds them."""
    url = _url(sentinels, tmp_path)
    conn = connect(url, socket_connect_timeout=2, socket_timeout=2)
    queue = Queue("plangate-plans", connection=conn)
    old, new = sentinels.ports["master"], sentinels.ports["replica"]

    async def scenario() -> list[list[Enqueued | redis.RedisError]]:
        held = held_async(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            before = await write_all(conn, [prepare(queue, "os.getcwd", "job-before", None, ONCE_OPTIONS)], on=held)
            assert held.port == old  # type: ignore[attr-defined]
            conn.set("before", 1)
            assert sentinels.server("sentinel").sentinel_failover(SERVICE)
            wait_for("the sentinel to name the new master", lambda: sentinels.master_port() == new)
            wait_for(
                "the old master to follow", lambda: sentinels.server("master").info("replication")["role"] == "slave"
            )
            after = await write_all(conn, [prepare(queue, "os.getcwd", "job-after", None, ONCE_OPTIONS)], on=held)
            assert held.port == new  # type: ignore[attr-defined]
            return [before, after]
        finally:
            await held.disconnect()

    assert asyncio.run(scenario()) == [[Enqueued("job-before", False)], [Enqueued("job-after", False)]]
    wait_for("a write through the same synchronous client", lambda: conn.set("after", 2))
    assert conn.connection_pool.get_master_address() == ("127.0.0.1", new)  # type: ignore[attr-defined]
    new_master = sentinels.server("replica")
    assert new_master.info("replication")["role"] == "master"
    assert (new_master.get("before"), new_master.get("after")) == (b"1", b"2")
    assert new_master.lrange("rq:queue:plangate-plans", 0, -1) == [b"job-before", b"job-after"]


def test_the_sentinel_password_is_required_and_kept_apart(sentinels: Sentinels) -> None:
    """The sentinel has a password of its own: the master's is no key to it, nor the other way round."""
    master_only = f"redis+sentinel://:{sentinels.password}@127.0.0.1:{sentinels.ports['sentinel']}/{SERVICE}"
    with pytest.raises(MasterNotFoundError):
        connect(master_only, socket_timeout=2).ping()
    wrong_master = settings.load(
        {"REDIS_URL": sentinels.url, "REDIS_PASSWORD": "wrong", "REDIS_SENTINEL_PASSWORD": sentinels.sentinel_password}
    ).redis_url
    with pytest.raises(redis.AuthenticationError):
        connect(wrong_master, socket_timeout=2).ping()
