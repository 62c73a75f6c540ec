"""GitHub App authentication for jobs: the App JWT, a Redis-shared installation-token cache, clients.

Tokens live in Redis so every worker process shares one token per installation, encrypted with a
key derived from the App key (plumbing.records): Redis is reachable from the network terraform
shares, and a token there would let the plan's code comment as the bot. A Redis lock makes many
jobs asking at the same moment mint it once. A token is refreshed when fewer than REFRESH_MARGIN
seconds of its life remain, so no job starts with a token about to expire.

Every client a job gets is a workers.adapters.github.client.PlangateGitHubAPI: it masks what it sends,
paces writes per installation, retries what is safe to retry and honours rate limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import ssl
import time
import weakref
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import datetime

import httpx
import jwt
import redis
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from core import redis_keys
from core.render.backstop import Backstop
from plumbing.records import Records
from workers.adapters.github.checks import CheckRuns
from workers.adapters.github.client import RETRY_SECONDS, PlangateGitHubAPI, RateLimited, transient
from workers.adapters.github.metrics import Recorder
from workers.adapters.github.pacing import Pacer

USER_AGENT = "plangate"
REFRESH_MARGIN = 5 * 60
LOCK_SECONDS = 30  # longer than one mint request may take
CLOCK_SKEW = 60  # iat is backdated this much: a worker clock a little ahead of GitHub's still works
JWT_LIFETIME = 9 * 60  # exp - iat; exp - now stays under GitHub's 10-minute limit


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one per client would load the CA bundle each time."""
    return ssl.create_default_context()


def _http(timeout: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=timeout, verify=tls_context())


class GitHubAuthError(Exception):
    """The App could not authenticate (bad key, unknown installation); never carries a secret."""


@functools.lru_cache(maxsize=4)
def _signing_key(private_key: str) -> PrivateKeyTypes:
    """Parsing an RSA PEM is slow next to signing a JWT with it; parse it once per process."""
    return load_pem_private_key(private_key.encode(), password=None)


def app_jwt(app_id: int, private_key: str) -> str:
    """An RS256 App JWT: iat backdated 60 s for clock skew, exp within GitHub's 10-minute limit."""
    issued = int(time.time()) - CLOCK_SKEW
    claims = {"iat": issued, "exp": issued + JWT_LIFETIME, "iss": str(app_id)}
    return jwt.encode(claims, _signing_key(private_key), algorithm="RS256")  # type: ignore[arg-type]


def _expires_epoch(expires_at: str) -> float:
    return datetime.fromisoformat(expires_at.replace("Z", "+00:00")).timestamp()


class TokenCache:
    """Installation tokens shared by all workers through Redis (encrypted there)."""

    def __init__(
        self,
        conn: redis.Redis,
        *,
        app_id: int,
        private_key: str,
        api_url: str,
        secrets: Iterable[str] = (),
        report: str = "checks",
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self._conn = conn
        self.retry_seconds = retry_seconds
        self._records = Records(conn, private_key)
        self._app_id = app_id
        self._private_key = private_key
        self._api_url = api_url
        self._secrets = (private_key, *secrets)
        self._seen: set[str] = set()  # tokens this process used: masked in everything it posts
        self.minted = 0  # tokens this process minted, for tests and metrics
        self.pacer = Pacer(conn)
        self.metrics = Recorder(conn)
        self.checks = CheckRuns(self._records, report)
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[int, asyncio.Lock]] = (
            weakref.WeakKeyDictionary()
        )

    def remember(self, secret: str) -> None:
        """A secret this process handed out (an OIDC token): masked in everything it posts from now on."""
        self._seen.add(secret)

    def backstop(self) -> Backstop:
        return Backstop((*self._secrets, *self._seen))

    def _key(self, installation_id: int) -> str:
        return redis_keys.installation_token(installation_id)

    def _cached(self, installation_id: int) -> str | None:
        key = self._key(installation_id)
        text = self._records.decrypt(key, self._conn.get(key))
        if text is None:
            return None
        entry = json.loads(text)
        if float(entry["expires"]) - time.time() < REFRESH_MARGIN:
            return None
        token: str = entry["token"]
        self._seen.add(token)
        return token

    def _local_lock(self, installation_id: int) -> asyncio.Lock:
        """Coroutines of one process queue here, so only one of them polls the Redis lock."""
        locks = self._locks.setdefault(asyncio.get_running_loop(), {})
        return locks.setdefault(installation_id, asyncio.Lock())

    async def token(self, installation_id: int) -> str:
        """A token with at least REFRESH_MARGIN seconds left, minted at most once across workers."""
        cached = self._cached(installation_id)
        if cached is not None:
            return cached
        async with self._local_lock(installation_id):
            cached = self._cached(installation_id)
            if cached is not None:
                return cached
            lock = self._conn.lock(redis_keys.installation_token_lock(installation_id), timeout=LOCK_SECONDS)
            deadline = time.monotonic() + LOCK_SECONDS + 5
            while not lock.acquire(blocking=False):  # never block the event loop on Redis
                if time.monotonic() > deadline:
                    raise GitHubAuthError(f"timed out waiting for the token lock of installation {installation_id}")
                await asyncio.sleep(0.05)
                cached = self._cached(installation_id)
                if cached is not None:
                    return cached
            try:
                cached = self._cached(installation_id)
                if cached is not None:
                    return cached
                token, expires = await self._mint(installation_id)
                self._seen.add(token)
                ttl = int(expires - time.time() - REFRESH_MARGIN)
                if ttl > 0:
                    entry = json.dumps({"token": token, "expires": expires})
                    key = self._key(installation_id)
                    self._conn.set(key, self._records.encrypt(key, entry), ex=ttl)
                return token
            finally:
                with contextlib.suppress(redis.exceptions.LockError):
                    lock.release()

    async def _mint(self, installation_id: int) -> tuple[str, float]:
        async with _http(30) as http:
            gh = PlangateGitHubAPI(
                http,
                USER_AGENT,
                backstop=self.backstop(),
                metrics=self.metrics,
                retry_seconds=self.retry_seconds,
                base_url=self._api_url,
            )
            try:
                data = await gh.post(
                    f"/app/installations/{installation_id}/access_tokens",
                    data=b"",
                    jwt=app_jwt(self._app_id, self._private_key),
                )
            except RateLimited:
                raise  # a long wait: the job is run again after it (workers.rescheduling), not failed
            except Exception as exc:
                if transient(exc):
                    raise  # GitHub is down: the job comes back after the outage (workers.rescheduling)
                status = getattr(getattr(exc, "status_code", None), "value", "no answer")
                raise GitHubAuthError(
                    f"could not mint a token for installation {installation_id}: HTTP {status}: {exc}"
                ) from None
        self.minted += 1
        return data["token"], _expires_epoch(data["expires_at"])


@asynccontextmanager
async def installation_client(
    cache: TokenCache, installation_id: int, api_url: str
) -> AsyncIterator[PlangateGitHubAPI]:
    """A gidgethub client acting as the installation for the length of one job."""
    token = await cache.token(installation_id)
    async with _http(60) as http:
        yield PlangateGitHubAPI(
            http,
            USER_AGENT,
            backstop=cache.backstop(),
            installation_id=installation_id,
            pacer=cache.pacer,
            metrics=cache.metrics,
            checks=cache.checks,
            retry_seconds=cache.retry_seconds,
            oauth_token=token,
            base_url=api_url,
        )


@asynccontextmanager
async def app_client(app_id: int, private_key: str, api_url: str) -> AsyncIterator[tuple[PlangateGitHubAPI, str]]:
    """A gidgethub client and a fresh JWT for the App-level routes (`/app`, `/repos/…/installation`)."""
    async with _http(60) as http:
        yield (
            PlangateGitHubAPI(http, USER_AGENT, backstop=Backstop([private_key]), base_url=api_url),
            app_jwt(app_id, private_key),
        )
