"""Shared fixtures: a real Redis for the whole run, flushed per test; the bubblewrap sandbox this host runs."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from core.sandbox_paths import SandboxPaths
from standin.local_redis import private_redis
from tests.standin_client import api, gh, key, receiver, repo  # noqa: F401  (fixtures for the stand-in's tests)
from tests.tfplans import tf_env  # noqa: F401  (fixture for the tests of real plans)
from workers.adapters.terraform.sandbox import Sandbox, prepare


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """PLANGATE_TEST_REDIS_URL (set by .ci/run), else a private redis-server for this run."""
    url = os.environ.get("PLANGATE_TEST_REDIS_URL")
    if url:
        yield url
        return
    with private_redis() as started:
        yield started


@pytest.fixture
def redis_conn(redis_url: str) -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(redis_url)
    conn.flushdb()
    yield conn
    conn.flushdb()


@pytest.fixture(autouse=True)
def _fresh_redis(request: pytest.FixtureRequest) -> None:
    """Every test that uses Redis starts from an empty database: job ids repeat between tests
    (the stand-in numbers repositories and comments the same way each time)."""
    if "redis_url" in request.fixturenames:
        redis.Redis.from_url(request.getfixturevalue("redis_url")).flushdb()


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """The sandbox `plangate worker` would run terraform in here (probed once, as at start-up)."""
    return prepare("bwrap", SandboxPaths(), tmp_path_factory.mktemp("probe"))
