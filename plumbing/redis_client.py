"""Every plangate Redis client, with redis-py's driver identity worked out once per process.

redis-py reads its own version from the package metadata for each new connection, which is slow. RQ's work
horses and every job open fresh connections after the fork, so each job paid that several times;
the identity resolved here, before the forks, is handed to every connection instead.

A redis+sentinel:// URL (plumbing/redis_url.py) gives clients whose connections ask the sentinels for the
master's address each time they connect: after a failover the old master drops its clients (or
answers READONLY, which redis-py turns into a dropped connection), and the next connection goes to
the new one. RQ takes any redis.Redis, and rebuilds one from its pool's connection class and
arguments in its scheduler process, which a Sentinel pool's connections survive.
"""

from __future__ import annotations

from typing import Any, cast

import redis
import redis.asyncio as aredis
import redis.asyncio.sentinel as asentinel
import redis.sentinel
from redis.asyncio.connection import AbstractConnection as AsyncConnection
from redis.driver_info import DriverInfo

from plumbing.redis_url import SentinelURL, is_sentinel, parse_sentinel

_DRIVER = DriverInfo()  # resolves the version now, once


def connect(url: str, **options: Any) -> redis.Redis:
    """`redis.Redis.from_url`, minus the per-connection metadata read, and Sentinel URLs too."""
    if is_sentinel(url):
        where = parse_sentinel(url)
        sentinels = redis.sentinel.Sentinel(where.sentinels, sentinel_kwargs=_to_sentinels(where, options))  # type: ignore[no-untyped-call]
        return cast(redis.Redis, sentinels.master_for(where.service, **_to_master(where, options)))  # type: ignore[no-untyped-call]
    return redis.Redis.from_url(url, driver_info=_DRIVER, **options)


def held_async(url: str, **options: Any) -> AsyncConnection:
    """One asyncio connection to `url`, outside any pool: its owner sends on it and reads its answers."""
    if is_sentinel(url):
        where = parse_sentinel(url)
        sentinels = asentinel.Sentinel(where.sentinels, sentinel_kwargs=_to_sentinels(where, options))  # type: ignore[no-untyped-call]
        pool = sentinels.master_for(where.service, **_to_master(where, options)).connection_pool
        # The pool's own connections hold it by a weak reference; this one outlives the client it came from.
        return cast(AsyncConnection, pool.connection_class(**{**pool.connection_kwargs, "connection_pool": pool}))
    pool = aredis.ConnectionPool.from_url(url, driver_info=_DRIVER, **options)
    return cast(AsyncConnection, pool.make_connection())  # type: ignore[no-untyped-call]


def connect_async(url: str, **options: Any) -> aredis.Redis:
    """`connect` for asyncio: a pooled client whose blocking reads (XREAD BLOCK) hold a connection, not a thread."""
    if is_sentinel(url):
        where = parse_sentinel(url)
        sentinels = asentinel.Sentinel(where.sentinels, sentinel_kwargs=_to_sentinels(where, options))  # type: ignore[no-untyped-call]
        return cast(aredis.Redis, sentinels.master_for(where.service, **_to_master(where, options)))
    return aredis.Redis.from_url(url, driver_info=_DRIVER, **options)


def _to_sentinels(where: SentinelURL, options: dict[str, Any]) -> dict[str, Any]:
    """How to reach the sentinels: the caller's socket timeouts, the sentinels' own password."""
    sockets = {k: v for k, v in options.items() if k.startswith("socket_")}
    return {**sockets, "password": where.sentinel_password, "driver_info": _DRIVER}


def _to_master(where: SentinelURL, options: dict[str, Any]) -> dict[str, Any]:
    return {"db": where.db, "username": where.username, "password": where.password, "driver_info": _DRIVER, **options}
