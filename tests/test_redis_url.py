"""REDIS_URL with its passwords given apart (mounted secret files): every host form and any password
comes out as a URL redis-py reads back to the same host, port, database and password."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from plumbing import redis_url as urls
from plumbing import settings
from plumbing.redis_client import connect
from plumbing.redis_url import read as parse_url  # redis-py's parse_url, typed
from plumbing.setting_values import SettingsError
from standin.local_redis import free_port

# What an environment variable or a secret file can hold (no NUL, no lone surrogate); a file's value
# is stripped, so the property is stated for the variable.
PASSWORDS = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1)
HOSTNAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,20}){0,3}", fullmatch=True)
IPV4 = st.ip_addresses(v=4).map(str)
IPV6 = st.ip_addresses(v=6).map(str)


def _written(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@given(host=st.one_of(HOSTNAMES, IPV4, IPV6), port=st.integers(1, 65535), db=st.integers(0, 15), password=PASSWORDS)
def test_any_host_and_password_come_out_as_redis_py_reads_them(host: str, port: int, db: int, password: str) -> None:
    for scheme in ("redis", "rediss"):
        url = f"{scheme}://{_written(host)}:{port}/{db}"
        loaded = settings.load({"REDIS_URL": url, "REDIS_PASSWORD": password})
        parsed = parse_url(loaded.redis_url)
        assert (parsed["host"], parsed["port"], parsed["db"]) == (host.lower(), port, db)
        assert parsed["password"] == password == loaded.redis_password
        assert loaded.secrets == (password,)


@given(password=PASSWORDS, user=st.sampled_from(["", "plangate", "a%40b"]))
def test_a_user_name_is_kept_as_written(password: str, user: str) -> None:
    loaded = settings.load({"REDIS_URL": f"redis://{user}:old@[fd00::7]:6380/2", "REDIS_PASSWORD": password})
    parsed = parse_url(loaded.redis_url)
    assert parsed.get("username", "") == user.replace("%40", "@")
    assert (parsed["host"], parsed["port"], parsed["password"]) == ("fd00::7", 6380, password)


@given(password=PASSWORDS)
def test_a_socket_gets_the_password_in_its_query(password: str) -> None:
    loaded = settings.load({"REDIS_URL": "unix:///run/redis/redis.sock?db=3", "REDIS_PASSWORD": password})
    parsed = parse_url(loaded.redis_url)
    assert (parsed["path"], parsed["db"], parsed["password"]) == ("/run/redis/redis.sock", 3, password)


@given(
    sentinels=st.lists(st.tuples(st.one_of(HOSTNAMES, IPV4, IPV6), st.none() | st.integers(1, 65535)), min_size=1),
    password=PASSWORDS,
    sentinel_password=st.none() | PASSWORDS,
    db=st.none() | st.integers(0, 15),
)
def test_a_sentinel_url_carries_every_sentinel_and_both_passwords(
    sentinels: list[tuple[str, int | None]], password: str, sentinel_password: str | None, db: int | None
) -> None:
    hosts = ",".join(_written(h) + (f":{p}" if p else "") for h, p in sentinels)
    env = {
        "REDIS_URL": f"redis+sentinel://{hosts}/mymaster" + (f"/{db}" if db is not None else ""),
        "REDIS_PASSWORD": password,
    }
    if sentinel_password is not None:
        env["REDIS_SENTINEL_PASSWORD"] = sentinel_password
    loaded = settings.load(env)
    where = urls.parse_sentinel(loaded.redis_url)
    assert where.sentinels == tuple((h.lower(), p or urls.SENTINEL_PORT) for h, p in sentinels)
    assert (where.service, where.db, where.password, where.sentinel_password) == (
        "mymaster",
        db or 0,
        password,
        sentinel_password,
    )
    assert loaded.redis_password == password
    assert set(loaded.secrets) == {password, sentinel_password} - {None}


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"REDIS_URL": "redis+sentinel://s1:26379"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1:26379/"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1:26379/mymaster/zero"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1:26379/mymaster/0/extra"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1:port/mymaster"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1,,s2/mymaster"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1/mymaster?socket_timeout=1"}, "REDIS_URL"),
        ({"REDIS_URL": "redis://redis:6379/0", "REDIS_SENTINEL_PASSWORD": "x"}, "REDIS_SENTINEL_PASSWORD"),
        ({"REDIS_URL": "redis://redis:sixty/0"}, "REDIS_URL"),
    ],
)
def test_a_malformed_url_names_its_setting_and_never_its_password(env: dict[str, str], name: str) -> None:
    password = "hunter2hunter2"
    with pytest.raises(SettingsError) as err:
        settings.load({**env, "REDIS_PASSWORD": password})
    assert err.value.name == name
    assert password not in str(err.value) and quote(password) not in str(err.value)


def test_a_worker_needs_the_master_password_behind_sentinel_too() -> None:
    with pytest.raises(SettingsError, match="has no password"):
        settings.load(
            {"REDIS_URL": "redis+sentinel://s1/mymaster", "REDIS_SENTINEL_PASSWORD": "s"}, need_redis_password=True
        )
    settings.load({"REDIS_URL": "redis+sentinel://s1/mymaster", "REDIS_PASSWORD": "p"}, need_redis_password=True)


@pytest.fixture
def ipv6_redis() -> Iterator[tuple[int, str]]:
    """A real redis-server listening on ::1 only, with a password holding URL metacharacters."""
    server = shutil.which("redis-server")
    assert server, "redis-server is needed (Debian: apt-get install redis-server)"
    port, password = free_port(), "p@ss:/word#" + secrets.token_hex(8)
    proc = subprocess.Popen(
        [server, "-", "--port", str(port), "--bind", "::1", "--save", "", "--appendonly", "no"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(f'requirepass "{password}"\n'.encode())
    proc.stdin.close()
    try:
        yield port, password
    finally:
        proc.terminate()
        proc.wait(10)


def test_plangate_connects_to_a_redis_on_an_ipv6_address(ipv6_redis: tuple[int, str]) -> None:
    port, password = ipv6_redis
    loaded = settings.load({"REDIS_URL": f"redis://[::1]:{port}/0", "REDIS_PASSWORD": password})
    conn = connect(loaded.redis_url)
    deadline = time.monotonic() + 10
    while True:
        try:
            assert conn.ping()
            break
        except redis.ConnectionError:
            assert time.monotonic() < deadline, "redis-server on ::1 did not start"
            time.sleep(0.05)
    assert conn.connection_pool.connection_kwargs["host"] == "::1"
    with pytest.raises(redis.AuthenticationError):
        connect(f"redis://:wrong@[::1]:{port}/0").ping()
