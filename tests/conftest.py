"""Shared fixtures: a real Redis for the whole run, flushed per test."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """PLANGATE_TEST_REDIS_URL (set by .ci/run), else a private redis-server for this run."""
    url = os.environ.get("PLANGATE_TEST_REDIS_URL")
    if url:
        yield url
        return
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is not installed and PLANGATE_TEST_REDIS_URL is not set")
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="plangate-redis-")
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def redis_conn(redis_url: str) -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(redis_url)
    conn.flushdb()
    yield conn
    conn.flushdb()
