"""Every plangate Redis client, with redis-py's driver identity worked out once per process.

redis-py reads its own version from the package metadata for each new connection (~6 ms). RQ's work
horses and every job open fresh connections after the fork, so each job paid that several times;
the identity resolved here, before the forks, is handed to every connection instead.
"""

from __future__ import annotations

from typing import Any, cast

import redis
import redis.asyncio as aredis
from redis.asyncio.connection import AbstractConnection as AsyncConnection
from redis.driver_info import DriverInfo

_DRIVER = DriverInfo()  # resolves the version now, once


def connect(url: str, **options: Any) -> redis.Redis:
    """`redis.Redis.from_url`, minus the per-connection metadata read."""
    return redis.Redis.from_url(url, driver_info=_DRIVER, **options)


def held_async(url: str, **options: Any) -> AsyncConnection:
    """One asyncio connection to `url`, outside any pool: its owner sends on it and reads its answers."""
    pool = aredis.ConnectionPool.from_url(url, driver_info=_DRIVER, **options)
    return cast(AsyncConnection, pool.make_connection())  # type: ignore[no-untyped-call]
