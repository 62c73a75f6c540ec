"""The GitHub client every job uses: masked bodies, paced writes, retries by kind, rate limits honoured.

gidgethub does the HTTP and the decoding; this subclass wraps its one request method:
- every JSON body passes the backstop mask (core.render.backstop) before it leaves;
- writes wait for the installation's pace (workers.adapters.github.pacing);
- 5xx answers, dropped connections and timeouts are retried with exponential backoff and jitter
  (stamina: for `retry_seconds`, two minutes unless PLANGATE_GITHUB_RETRY_SECONDS says otherwise) when
  repeating the request changes nothing; past that the job goes back to RQ (workers.rescheduling); a comment
  or issue create is retried only after looking for it on GitHub, so a POST whose answer was lost
  after GitHub stored it is never made twice;
- rate limits (core.github_policy) are waited out; a long wait in a job that may be re-run from the
  start (`deferrable`) is handed back to RQ as `RateLimited`, so no worker sits idle for minutes.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
import stamina
from gidgethub import GitHubBroken, HTTPException, sansio
from gidgethub.httpx import GitHubAPI
from uritemplate import variable

from core.github_policy import CREATE, READ, endpoint_class, rate_limit_wait, remaining, request_kind
from core.render.backstop import Backstop
from workers.adapters.github import metrics as github_metrics
from workers.adapters.github.checks import CheckRuns
from workers.adapters.github.pacing import Pacer

INLINE_WAIT = 30.0  # a rate-limit wait longer than this is handed back to RQ when the job may be re-run
MAX_LIMITED = 6  # rate-limited answers to one request before giving up
RETRY_SECONDS = 120.0  # transient failures: how long one request is retried
WAIT_MAX = 30.0  # the longest pause between two tries of one request

# Set by the RQ entry points: may this job be re-run from its start after a long rate-limit wait?
deferrable: contextvars.ContextVar[bool] = contextvars.ContextVar("plangate_deferrable", default=False)


class RateLimited(Exception):
    """GitHub asked us to wait `wait` seconds; the job is re-run after that (see workers.jobs)."""

    def __init__(self, wait: float, reason: str) -> None:
        super().__init__(f"GitHub {reason} rate limit: retry in {wait:.0f}s")
        self.wait = wait
        self.reason = reason


def transient(exc: BaseException) -> bool:
    """A failure GitHub (or the network to it) may not repeat: worth trying again later."""
    return isinstance(exc, GitHubBroken | httpx.TransportError)


def outage(exc: BaseException) -> bool:
    """GitHub (or the way to it) failed past one request's retries, here or in a task of the job's."""
    if isinstance(exc, BaseExceptionGroup):
        return any(outage(inner) for inner in exc.exceptions)
    return transient(exc) or (exc.__cause__ is not None and transient(exc.__cause__))


def _reason(exc: Exception) -> str:
    if isinstance(exc, HTTPException):
        return str(int(exc.status_code))
    return "timeout" if isinstance(exc, httpx.TimeoutException) else "connection"


class PlangateGitHubAPI(GitHubAPI):
    def __init__(
        self,
        client: httpx.AsyncClient,
        requester: str,
        *,
        backstop: Backstop,
        installation_id: int | None = None,
        pacer: Pacer | None = None,
        metrics: github_metrics.Recorder | None = None,
        checks: CheckRuns | None = None,
        retry_seconds: float = RETRY_SECONDS,
        **kwargs: Any,
    ) -> None:
        super().__init__(client, requester, **kwargs)
        self.retry_seconds = retry_seconds
        self.backstop = backstop
        self.checks = checks  # how this installation reports: check runs, or None for commit statuses
        self._installation = installation_id
        self._pacer = pacer
        self._metrics = metrics

    async def _make_request(
        self,
        method: str,
        url: str,
        url_vars: Mapping[str, variable.VariableValue] | None,
        data: Any,
        accept: str = sansio.accept_format(),
        jwt: str | None = None,
        oauth_token: str | None = None,
        content_type: str = "application/json",
        extra_headers: dict[str, str] | None = None,
    ) -> tuple[bytes, str | None, int]:
        if data != b"" and content_type == "application/json":
            data = self.backstop.body(data)
        full = sansio.format_url(url, url_vars, base_url=self.base_url)
        path = urlsplit(full).path.removeprefix(urlsplit(self.base_url).path.rstrip("/"))
        kind, name = request_kind(method, path), endpoint_class(method, path)
        if kind != READ and self._pacer is not None and self._installation is not None:
            waited = await self._pacer.write_slot(self._installation)
            if waited and self._metrics:
                self._metrics.paced(waited)

        async def once() -> tuple[bytes, str | None, int]:
            result: tuple[bytes, str | None, int] = await super(PlangateGitHubAPI, self)._make_request(
                method, url, url_vars, data, accept, jwt, oauth_token, content_type, extra_headers
            )
            return result

        limited = 0
        while True:
            try:
                result = await self._retrying(once, kind, name, path, data)
                self._saw_remaining()
                return result
            except HTTPException as exc:
                self._saw_remaining(exc.headers)
                found = rate_limit_wait(int(exc.status_code), exc.headers, str(exc), time.time(), limited + 1)
                if found is None:
                    raise
                reason, wait = found
                limited += 1
                if self._metrics:
                    self._metrics.limited(self._installation, name, reason, wait)
                if limited > MAX_LIMITED or (wait > INLINE_WAIT and deferrable.get()):
                    raise RateLimited(wait, reason) from exc
                await asyncio.sleep(wait)

    async def _retrying(self, once: Any, kind: str, name: str, path: str, data: Any) -> tuple[bytes, str | None, int]:
        """One request, repeated on transient failures when that is safe (see the module docstring)."""
        started = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=2)  # GitHub's clock may lag ours a little
        last: str | None = None  # why the previous attempt failed
        async for attempt in stamina.retry_context(
            on=transient,
            attempts=None,
            timeout=self.retry_seconds,
            wait_initial=min(0.5, self.retry_seconds / 8),
            wait_max=min(WAIT_MAX, self.retry_seconds / 4),
        ):
            with attempt:
                if last is not None:
                    if self._metrics:
                        self._metrics.retried(name, last)
                    if kind == CREATE:
                        landed = await self._landed(path, data, started)
                        if landed is not None:
                            return landed
                try:
                    result: tuple[bytes, str | None, int] = await once()
                    return result
                except Exception as exc:
                    last = _reason(exc)
                    raise
        raise AssertionError("unreachable: stamina re-raises the last failure")

    async def _landed(self, path: str, data: Any, since: dt.datetime) -> tuple[Any, None, int] | None:
        """The comment or issue an earlier attempt created (GitHub stored it, the answer was lost)."""
        if not isinstance(data, Mapping):
            return None
        stamp = since.strftime("%Y-%m-%dT%H:%M:%SZ")
        if path.endswith("/comments"):
            listing = f"{path}?since={stamp}&per_page=100"
            match = {"body": data.get("body")}
        elif path.endswith("/replies"):  # a review thread's: it lands among the PR's review comments
            listing = f"{path.rsplit('/', 2)[0]}?since={stamp}&per_page=100"
            match = {"body": data.get("body")}
        else:
            listing = f"{path}?state=all&sort=created&direction=desc&since={stamp}&per_page=100"
            match = {"title": data.get("title"), "body": data.get("body")}
        async for item in self.getiter(listing):
            if all(item.get(k) == v for k, v in match.items()) and (item.get("user") or {}).get("type") == "Bot":
                return item, None, 201
        return None

    def _saw_remaining(self, headers: Mapping[str, str] | None = None) -> None:
        if self._metrics is None or self._installation is None:
            return
        left = remaining(headers) if headers is not None else (self.rate_limit.remaining if self.rate_limit else None)
        if left is not None:
            self._metrics.remaining(self._installation, left)
