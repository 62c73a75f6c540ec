"""REDIS_URL's forms: redis-py's own (redis://, rediss://, unix://) and Sentinel's (redis+sentinel://).

A Sentinel URL names the sentinels and the master's service name; the clients ask the sentinels where
the master is and follow it through a failover (plumbing/redis_client.py):

    redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB][?sentinel_password=...]

The userinfo password is the master's (and its replicas'); `sentinel_password` authenticates to the
sentinels, which often have none. Both are percent-encoded. A port left out is Sentinel's 26379.
Nothing here ever puts a password into an error message: they end up in logs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from redis.connection import parse_url

read: Callable[[str], dict[str, Any]] = parse_url  # redis-py's reading of redis://, rediss:// and unix:// URLs

SENTINEL_SCHEME = "redis+sentinel"
SCHEMES = ("redis", "rediss", "unix", SENTINEL_SCHEME)
SENTINEL_PORT = 26379
SENTINEL_OPTIONS = ("sentinel_password",)


class BadURL(ValueError):
    """The setting `setting` is unusable; `problem` says why, without any secret."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(problem)
        self.setting = setting
        self.problem = problem


@dataclass(frozen=True)
class SentinelURL:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int
    username: str | None
    password: str | None
    sentinel_password: str | None


def is_sentinel(url: str) -> bool:
    return url.startswith(SENTINEL_SCHEME + "://")


def with_passwords(url: str, password: str | None, sentinel_password: str | None) -> str:
    """`url` holding the passwords given apart from it (REDIS_PASSWORD, REDIS_SENTINEL_PASSWORD), quoted,
    and checked to be a URL the clients can read. The host part is kept as written: urlsplit's
    `hostname` drops an IPv6 address's brackets, and redis-py cannot read `redis://:pw@::1:6379`."""
    if sentinel_password is not None and not is_sentinel(url):
        raise BadURL("REDIS_SENTINEL_PASSWORD", f"needs a {SENTINEL_SCHEME}:// REDIS_URL")
    parts = urlsplit(url)
    if parts.scheme == "unix":  # a query parameter (urlsplit would write `unix:/path` back, unread by redis-py)
        built = url if password is None else f"{url}{'&' if parts.query else '?'}password={quote(password, safe='')}"
        check(built)
        return built
    if sentinel_password is not None:
        joiner = "&" if parts.query else ""
        parts = parts._replace(query=f"{parts.query}{joiner}sentinel_password={quote(sentinel_password, safe='')}")
    if password is not None:
        hosts = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username or ''}:{quote(password, safe='')}@{hosts}")
    built = parts.geturl()
    check(built)
    return built


def check(url: str) -> None:
    """Raise BadURL unless the clients can connect with `url` as it is."""
    if is_sentinel(url):
        parse_sentinel(url)
        return
    try:
        urlsplit(url).port  # noqa: B018  (raises on a port that is not a number)
        read(url)
    except ValueError:
        raise BadURL("REDIS_URL", "is not a URL redis-py can read (an IPv6 address goes in brackets)") from None


def parse_sentinel(url: str) -> SentinelURL:
    """The parts of a redis+sentinel:// URL; BadURL naming what is wrong."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    sentinels = tuple(_address(item) for item in hosts.split(","))
    path = [unquote(p) for p in parts.path.split("/")[1:]]
    if not path or not path[0] or len(path) > 2:
        raise BadURL("REDIS_URL", "a Sentinel URL ends in /SERVICE or /SERVICE/DB (the master's name in Sentinel)")
    db = path[1] if len(path) == 2 else "0"
    if not db.isdigit():
        raise BadURL("REDIS_URL", "the database after the service name must be a number")
    options = _options(parts.query)
    username, _, password = userinfo.partition(":") if userinfo else ("", "", "")
    return SentinelURL(
        sentinels=sentinels,
        service=path[0],
        db=int(db),
        username=unquote(username) or None,
        password=unquote(password) or None,
        sentinel_password=options.get("sentinel_password"),
    )


def password(url: str) -> str | None:
    """The Redis (master) password `url` carries."""
    if is_sentinel(url):
        return parse_sentinel(url).password
    found = read(url).get("password")
    return str(found) if found else None


def sentinel_password(url: str) -> str | None:
    return parse_sentinel(url).sentinel_password if is_sentinel(url) else None


def _address(item: str) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{item.strip()}")
        port = parts.port or SENTINEL_PORT
    except ValueError:
        raise BadURL("REDIS_URL", "a sentinel is HOST, HOST:PORT or [IPv6]:PORT") from None
    if not parts.hostname:
        raise BadURL("REDIS_URL", "a sentinel is HOST, HOST:PORT or [IPv6]:PORT")
    return parts.hostname, port


def _options(query: str) -> dict[str, str]:
    """The query's options, percent-decoded (a literal `+` stays a `+`, as in the userinfo)."""
    found = {}
    for item in filter(None, query.split("&")):
        name, _, value = item.partition("=")
        if name not in SENTINEL_OPTIONS:
            raise BadURL("REDIS_URL", f"a Sentinel URL's query takes only {', '.join(SENTINEL_OPTIONS)}")
        found[name] = unquote(value)
    return found
