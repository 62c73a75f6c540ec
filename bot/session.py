"""Status-page sessions after "Sign in with GitHub": a signed cookie naming a short-lived record in Redis.

The cookie is `sid.expires.signature`; the record holds only the login and the full names of the
repositories that person could read when they signed in (lower-cased), never a token. The record sits in
Redis rather than in the cookie because a person may read hundreds of repositories and browsers drop
cookies over 4 KB; a bonus is that signing out really ends the session. Losing Redis only signs people out.
"""

from __future__ import annotations

import hmac
import json
import secrets
from dataclasses import dataclass

import redis

from bot import signing
from core import redis_keys

SESSION_COOKIE = "plangate_session"
SESSION_TTL = 3600  # visibility is read from GitHub again at least this often
_PREFIX = redis_keys.SESSION_PREFIX


@dataclass(frozen=True)
class Viewer:
    """A signed-in person: their login and the repositories (lower-cased full names) they may see."""

    login: str
    repos: frozenset[str]


def session_key(client_secret: str) -> bytes:
    """The cookie-signing key: HKDF of GITHUB_CLIENT_SECRET (sign-in exists only when it is set), never a
    default; rotating the client secret after a leak also ends every session."""
    return signing.derive_key(client_secret, "status session")


def start(conn: redis.Redis, key: bytes, login: str, repos: list[str], now: float) -> str:
    """Store the record and return the cookie value for it."""
    sid = secrets.token_urlsafe(32)
    record = {"login": login, "repos": sorted({r.lower() for r in repos})}
    conn.set(_PREFIX + sid, json.dumps(record), ex=SESSION_TTL)
    payload = f"{sid}.{int(now) + SESSION_TTL}"
    return f"{payload}.{signing.sign(key, payload)}"


def _sid(key: bytes, cookie: str | None, now: float) -> str | None:
    """The session id of a genuine, unexpired cookie; None for anything forged, altered or stale."""
    parts = (cookie or "").split(".")
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    sid, expires, signature = parts
    if not hmac.compare_digest(signature, signing.sign(key, f"{sid}.{expires}")):
        return None
    return sid if now < int(expires) else None


def find(conn: redis.Redis, key: bytes, cookie: str | None, now: float) -> Viewer | None:
    sid = _sid(key, cookie, now)
    raw = conn.get(_PREFIX + sid) if sid else None
    if not isinstance(raw, bytes | str):
        return None
    try:
        record = json.loads(raw)
        return Viewer(login=str(record["login"]), repos=frozenset(str(r) for r in record["repos"]))
    except (ValueError, KeyError, TypeError):
        return None


def end(conn: redis.Redis, key: bytes, cookie: str | None, now: float) -> None:
    sid = _sid(key, cookie, now)
    if sid:
        conn.delete(_PREFIX + sid)
