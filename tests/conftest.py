"""Shared fixtures: a real Redis for the whole run, flushed per test; the bubblewrap sandbox this host runs;
the cgroup root the tests may make step cgroups in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from core.sandbox_paths import SandboxPaths
from standin.local_redis import private_redis
from tests.browser import browser  # noqa: F401  (fixture for the browser tests)
from tests.standin_client import api, gh, key, receiver, repo  # noqa: F401  (fixtures for the stand-in's tests)
from tests.tfplans import tf_env  # noqa: F401  (fixture for the tests of real plans)
from workers.adapters.terraform.cgroups import CgroupRoot
from workers.adapters.terraform.cgroups_probe import own_cgroups, probe
from workers.adapters.terraform.sandbox import Sandbox, SandboxError, prepare


def pytest_configure(config: pytest.Config) -> None:
    """`slow` sits beside `e2e` (pyproject.toml): `make unit` runs what carries neither."""
    config.addinivalue_line(
        "markers",
        "slow: runs programs of its own beyond a flow's git and terraform (terraform steps and the sandbox "
        "driven directly, Redis servers, plangate processes, kubectl, wheel builds) or seconds of work",
    )


@pytest.hookimpl(trylast=True)  # after `-m` has chosen the tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """PLANGATE_TEST_SHARD=K/N keeps the tests of every Nth file, from the Kth (files sorted by path): `make
    test` runs the end-to-end tests as two such shards beside the rest, so the slowest third is not one queue."""
    shard = os.environ.get("PLANGATE_TEST_SHARD")
    if not shard:
        return
    index, count = (int(part) for part in shard.split("/"))
    files = sorted({str(item.path) for item in items})
    mine = set(files[index - 1 :: count])
    config.hook.pytest_deselected(items=[item for item in items if str(item.path) not in mine])
    items[:] = [item for item in items if str(item.path) in mine]


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


@pytest.fixture(scope="session")
def cgroups() -> CgroupRoot:
    """Step cgroups under the tests' own cgroup (v1's memory hierarchy, or v2 where its memory
    controller is already handed to children: the tests never move processes), else skip."""
    mine = own_cgroups(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    for version, path, _ in mine:
        if version == 2 and "memory" not in (path / "cgroup.subtree_control").read_text().split():
            continue
        try:
            found = probe(str(path)).cgroups
        except SandboxError:
            continue
        if found is not None:
            return found
    pytest.skip(f"no cgroup here the tests may make memory cgroups in (own cgroups: {mine})")
