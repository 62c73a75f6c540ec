"""GitHub's REST rate limits, enforced, so that "no 403 during a burst" means something in a test.

Primary: every API request counts against its caller (an installation, the App's JWT, a user token; else the
client address) for an hour from the first one; answers carry `x-ratelimit-*`; at 0 remaining GitHub answers 403
until `x-ratelimit-reset`. Secondary: content-creating requests (POST, PATCH, PUT, DELETE; not minting an
installation token) per caller in sliding windows, by default GitHub's documented 80 a minute and 500 an hour;
past that GitHub answers 403 with `retry-after` and does nothing. Git over HTTP and the OAuth web flow are not
the REST API and are neither counted nor decorated.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from standin.answers import Answer, note_of, request_id
from standin.auth import Caller, caller
from standin.state import State

PRIMARY_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
SECONDARY_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
SUPPORT = " If you reach out to GitHub Support for help, please include the request ID {}."
SECONDARY = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again." + SUPPORT
CONTENT_BLOCKED = (
    "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. "
    "Please retry your request again later." + SUPPORT
)
UNAUTHENTICATED_TAIL = (
    " (But here's the good news: Authenticated requests get a higher rate limit. "
    "Check out the documentation for more details.)"
)
WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
NOT_CONTENT = re.compile(r"/app/installations/\d+/access_tokens")
NOT_API = re.compile(r"/[^/]+/[^/]+\.git/.*|/login/.*")


@dataclass(frozen=True)
class Window:
    """At most `limit` content-creating requests in any `seconds`."""

    limit: int
    seconds: float

    def __post_init__(self) -> None:
        if self.limit < 1 or self.seconds <= 0:
            raise ValueError(f"a window needs a limit ≥ 1 and seconds > 0, not {self}")


GITHUB_CONTENT_LIMITS = (Window(80, 60.0), Window(500, 3600.0))


def is_api(path: str) -> bool:
    return NOT_API.fullmatch(path) is None


def creates_content(method: str, path: str) -> bool:
    return method in WRITES and NOT_CONTENT.fullmatch(path) is None


def primary_message(who: Caller) -> str:
    """GitHub's wording per kind of caller ("... for installation ID 42.")."""
    if who.kind == "ip":
        return f"API rate limit exceeded for {who.ident}.{UNAUTHENTICATED_TAIL}"
    return f"API rate limit exceeded for {who.kind} ID {who.ident}."


def primary_refusal(who: Caller, limit: int, reset: int) -> Answer:
    headers = rate_headers(limit, 0, limit, reset)
    headers["x-github-request-id"] = request_id()
    body = {"message": primary_message(who), "documentation_url": PRIMARY_DOCS, "status": "403"}
    return Answer.json(403, body, headers)


def secondary_refusal(
    status: int, retry_after: int | None, headers: dict[str, str], message: str = SECONDARY
) -> Answer:
    """403 (or 429) naming a secondary limit; `retry-after` only when given, as GitHub does."""
    rid = request_id()
    extra = {**headers, "x-github-request-id": rid}
    if retry_after is not None:
        extra["retry-after"] = str(retry_after)
    body = {"message": message.format(rid), "documentation_url": SECONDARY_DOCS, "status": str(status)}
    return Answer.json(status, body, extra)


def rate_headers(limit: int, remaining: int, used: int, reset: int) -> dict[str, str]:
    return {
        "x-ratelimit-limit": str(limit),
        "x-ratelimit-remaining": str(remaining),
        "x-ratelimit-used": str(used),
        "x-ratelimit-reset": str(reset),
        "x-ratelimit-resource": "core",
    }


@dataclass
class _Quota:
    used: int
    reset: int  # epoch seconds


@dataclass(frozen=True)
class Verdict:
    headers: dict[str, str]  # the x-ratelimit-* headers for this request's answer
    refusal: Answer | None = None
    kind: str | None = None  # "primary" | "secondary" when refused


@dataclass
class Limits:
    """The knobs tests turn (`gh.limits.core = 10`, `gh.limits.content = [Window(20, 10)]`) and the counters.

    `clock` gives epoch seconds; a test may replace it to move time without sleeping.
    """

    core: int = 5000  # per installation, App or user, per window (GitHub's minimum for an installation)
    unauthenticated: int = 60  # per client address
    window_seconds: float = 3600.0
    content: Sequence[Window] = GITHUB_CONTENT_LIMITS
    clock: Callable[[], float] = time.time
    _quotas: dict[Caller, _Quota] = field(default_factory=dict, init=False, repr=False)
    _writes: dict[Caller, deque[float]] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def limit_for(self, who: Caller) -> int:
        return self.unauthenticated if who.kind == "ip" else self.core

    def reset(self) -> None:
        """Forget every count, as if a new hour had begun for everyone."""
        with self._lock:
            self._quotas.clear()
            self._writes.clear()

    def admit(self, who: Caller, method: str, path: str) -> Verdict:
        """Count one request; the refusal GitHub would give instead of performing it, if any."""
        now = self.clock()
        limit = self.limit_for(who)
        with self._lock:
            quota = self._quota(who, now)
            if quota.used >= limit:
                return Verdict({}, primary_refusal(who, limit, quota.reset), "primary")
            quota.used += 1
            headers = rate_headers(limit, limit - quota.used, quota.used, quota.reset)
            if not creates_content(method, path):
                return Verdict(headers)
            wait = self._content_wait(who, now)
            if wait > 0:
                answer = secondary_refusal(403, max(1, math.ceil(wait)), headers, CONTENT_BLOCKED)
                return Verdict(headers, answer, "secondary")
            self._writes.setdefault(who, deque()).append(now)
            return Verdict(headers)

    def _quota(self, who: Caller, now: float) -> _Quota:
        quota = self._quotas.get(who)
        if quota is None or now >= quota.reset:
            quota = self._quotas[who] = _Quota(0, math.ceil(now + self.window_seconds))
        return quota

    def _content_wait(self, who: Caller, now: float) -> float:
        """Seconds until every window has a free slot again (0: there is one now)."""
        times = self._writes.get(who, deque())
        horizon = max((w.seconds for w in self.content), default=0.0)
        while times and times[0] <= now - horizon:
            times.popleft()
        wait = 0.0
        for window in self.content:
            recent = [t for t in times if t > now - window.seconds]
            if len(recent) >= window.limit:
                wait = max(wait, recent[len(recent) - window.limit] + window.seconds - now)
        return wait


class RateLimiting:
    """Counts every REST request, refuses past a limit, and puts `x-ratelimit-*` on answers below 500.

    A 5xx carries none: the 502 GitHub's front end sends has no rate-limit headers (octokit/request.js#589).
    An answer that already has them (an injected primary-limit fault) keeps its own.
    """

    def __init__(self, app: ASGIApp, state: State, limits: Limits) -> None:
        self.app = app
        self.state = state
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api(scope["path"]):
            await self.app(scope, receive, send)
            return
        who = caller(self.state, Request(scope))
        verdict = self.limits.admit(who, scope["method"], scope["path"])
        if verdict.refusal is not None:
            note_of(scope).rate_limit = verdict.kind
            await verdict.refusal.send(send)
            return
        extra = [(k.encode(), v.encode()) for k, v in verdict.headers.items()]

        async def decorate(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 500:
                headers = list(message.get("headers", []))
                if not any(name.lower() == b"x-ratelimit-limit" for name, _ in headers):
                    message = {**message, "headers": headers + extra}
            await send(message)

        await self.app(scope, receive, decorate)
