"""Faults a test queues up so the stand-in misbehaves like GitHub on a bad minute.

A fault answers the next `times` requests whose method is `method` and whose URL path `re.fullmatch`es
`path_regex`; of the queued faults that match, the one added first answers until its `times` are used up.
Before the work (the default), the request is read and then answered with the fault's status, or the connection
is dropped with no answer at all. With `after_store=True` the request is performed (the comment or issue IS
created) and only the answer is lost: dropped, or replaced by the fault's status. That is the case where a
client must look before it POSTs again. Faults apply to every path the stand-in serves, git over HTTP included.

`latency` (seconds, 0 by default) delays every answer, as the network between a worker and GitHub does: the
stand-in answers from the same machine in milliseconds, where GitHub takes tens to hundreds.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from http import HTTPStatus

import anyio
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from standin.answers import Answer, note_of
from standin.auth import DOCS, caller
from standin.dropping import DROP, can_drop
from standin.limits import Limits, primary_refusal, secondary_refusal
from standin.state import State

RETRY_LATER = "Sorry about that. Please try resubmitting your request and contact us if the problem persists."
SERVER_ERRORS = {  # what GitHub's API says with each 5xx, as clients have logged it
    500: "Server Error",  # no 500 body was found in the wild: the 502 one
    502: "Server Error",  # octokit/request.js#589, PyGithub logs
    503: f"No server is currently available to service your request. {RETRY_LATER}",  # taskcluster-github#96
    504: f"We couldn't respond to your request in time. {RETRY_LATER}",  # action-gh-release#612
}


@dataclass
class Fault:
    """One queued misbehaviour. `status` None means the connection is dropped without an answer."""

    method: str
    path_regex: str
    times: int = 1
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: object = None  # JSON, or bytes sent as they are; None: GitHub's body for the status
    after_store: bool = False
    rate_limit: str | None = None  # "primary" | "secondary": a rate-limit refusal, for the request log
    retry_after: int | None = None  # secondary: the `retry-after` header
    reset_in_seconds: float = 0.0  # primary: `x-ratelimit-reset` this far after the answer
    hang: float = 0.0  # seconds the request waits before it is served (as GitHub's, unharmed)
    hits: int = 0  # requests it has answered so far

    def matches(self, method: str, path: str) -> bool:
        return method == self.method and re.fullmatch(self.path_regex, path) is not None


def _default_body(status: int) -> object:
    if status in SERVER_ERRORS:
        return {"message": SERVER_ERRORS[status]}
    return {"message": HTTPStatus(status).phrase, "documentation_url": DOCS, "status": str(status)}


class Faults:
    """The queue tests drive through `gh.faults`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[Fault] = []
        self.latency = 0.0  # seconds before each answer: a network round trip
        self.down: int | None = None  # GitHub is out: every API request answers this 5xx until it is back

    def add(
        self,
        method: str,
        path_regex: str,
        *,
        times: int = 1,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        body: object = None,
        drop: bool = False,
        after_store: bool = False,
    ) -> Fault:
        """Queue a fault: `status` (with GitHub's body for it unless `body` is given), or `drop=True`.

        `after_store=True` performs the request first; without a status the connection is then dropped."""
        if (status is not None and drop) or (status is None and not drop and not after_store):
            raise ValueError("a fault answers a status or drops the connection: give one of status= and drop=True")
        if status is not None and not 100 <= status <= 599:
            raise ValueError(f"not an HTTP status: {status}")
        if status is None and (headers or body is not None):
            raise ValueError("a dropped connection has no headers or body")
        fault = Fault(method.upper(), path_regex, times, status, dict(headers or {}), body, after_store)
        return self._queued(fault)

    def secondary_limit(
        self, method: str, path_regex: str, retry_after: int | None = None, times: int = 1, *, status: int = 403
    ) -> Fault:
        """GitHub's secondary-limit refusal (403, or 429 with `status=429`), with `retry-after` when given."""
        fault = Fault(method.upper(), path_regex, times, status, rate_limit="secondary", retry_after=retry_after)
        return self._queued(fault)

    def primary_limit(self, method: str, path_regex: str, *, reset_in_seconds: float = 60.0, times: int = 1) -> Fault:
        """GitHub's primary-limit refusal: 403, `x-ratelimit-remaining: 0`, the reset that far ahead."""
        fault = Fault(method.upper(), path_regex, times, 403, rate_limit="primary", reset_in_seconds=reset_in_seconds)
        return self._queued(fault)

    def hang(self, method: str, path_regex: str, seconds: float, times: int = 1) -> Fault:
        """The request waits `seconds` (a worker stuck on GitHub), then is served as usual."""
        return self._queued(Fault(method.upper(), path_regex, times, hang=seconds))

    def outage(self, status: int = 503) -> None:
        """GitHub goes down: every API request answers `status` (with GitHub's body) until `back()`."""
        if status not in SERVER_ERRORS:
            raise ValueError(f"an outage answers one of {sorted(SERVER_ERRORS)}")
        self.down = status

    def back(self) -> None:
        self.down = None

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()

    @property
    def pending(self) -> list[Fault]:
        """Faults still waiting for (more) matching requests, in the order they will answer."""
        with self._lock:
            return list(self._queue)

    def take(self, method: str, path: str) -> Fault | None:
        """The fault that answers this request, if any; counts it as used."""
        with self._lock:
            for fault in self._queue:
                if fault.matches(method, path):
                    fault.hits += 1
                    if fault.hits >= fault.times:
                        self._queue.remove(fault)
                    return fault
            return None

    def _queued(self, fault: Fault) -> Fault:
        re.compile(fault.path_regex)  # a bad pattern fails here, in the test, not in the server thread
        if fault.times < 1:
            raise ValueError("times must be at least 1")
        with self._lock:
            self._queue.append(fault)
        return fault


class FaultInjection:
    """Answers a request from the fault queue when a fault matches it; otherwise lets it through."""

    def __init__(self, app: ASGIApp, state: State, faults: Faults, limits: Limits) -> None:
        self.app = app
        self.state = state
        self.faults = faults
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.faults.latency > 0 and scope["type"] == "http":
            await anyio.sleep(self.faults.latency)
        if self.faults.down is not None and scope["type"] == "http":
            note_of(scope).fault = True
            await _read_request(receive)
            await Answer.json(self.faults.down, _default_body(self.faults.down), {}).send(send)
            return
        fault = self.faults.take(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if fault is not None and fault.hang:
            await anyio.sleep(fault.hang)
            fault = None
        if fault is None:
            await self.app(scope, receive, send)
            return
        note = note_of(scope)
        note.fault, note.rate_limit = True, fault.rate_limit
        if fault.after_store:
            await self.app(scope, receive, _swallow)
        else:
            await _read_request(receive)  # the request arrived whole; only the answer goes wrong
        if fault.status is None:
            if not can_drop(scope):
                raise RuntimeError("this server cannot drop connections: serve the stand-in with standin.server.start")
            await send({"type": DROP})
            return
        await self._answer(fault, scope).send(send)

    def _answer(self, fault: Fault, scope: Scope) -> Answer:
        assert fault.status is not None
        if fault.rate_limit == "primary":
            who = caller(self.state, Request(scope))
            reset = math.ceil(self.limits.clock() + fault.reset_in_seconds)
            return primary_refusal(who, self.limits.limit_for(who), reset)
        if fault.rate_limit == "secondary":
            return secondary_refusal(fault.status, fault.retry_after, {})
        body = _default_body(fault.status) if fault.body is None else fault.body
        if isinstance(body, bytes):
            return Answer(fault.status, fault.headers, body)
        return Answer.json(fault.status, body, fault.headers)


async def _swallow(message: Message) -> None:
    """Where the answer of an `after_store` request goes: nowhere."""


async def _read_request(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
