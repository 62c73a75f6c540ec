"""Connections are opened in every work horse: none may read redis-py's package metadata again."""

from __future__ import annotations

import pytest
import redis
import redis.utils

from plumbing.redis_client import connect


def _metadata_read() -> str:
    raise AssertionError("redis-py read its version from the package metadata")


def test_a_new_connection_reads_no_package_metadata(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis.utils, "get_lib_version", _metadata_read)
    with pytest.raises(AssertionError, match="package metadata"):
        redis.Redis.from_url(redis_url).ping()  # what this module avoids
    conn = connect(redis_url)
    assert conn.ping()
    conn.connection_pool.disconnect()
    assert conn.ping()  # a fresh connection, as after a fork
